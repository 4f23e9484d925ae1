use super::*;
use superpi_proto::Role;
use superpi_providers::{ModelEntry, ProviderKind};
use superpi_store::SqliteStore;

/// A 1x1 PNG.
const PNG: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==";

fn config() -> ProvidersConfig {
    let mut config = ProvidersConfig::default();
    config.models.push(ModelEntry {
        name: "blind".into(),
        provider: ProviderKind::Mock,
        images: Some(false),
        ..ModelEntry::default()
    });
    config
}

fn new_store() -> (Arc<SqliteStore>, ImageStore) {
    let store = Arc::new(SqliteStore::open_in_memory().unwrap());
    (store.clone(), ImageStore::new(store))
}

fn prompt(blocks: Vec<ContentBlock>) -> Message {
    Message { role: Role::User, content: blocks, usage: None, stop_reason: None }
}

#[test]
fn a_prompt_image_is_stored_once_and_named_by_its_digest() {
    let (db, store) = new_store();
    // Declared as JPEG by a careless client: the bytes say PNG.
    let mut content = vec![ContentBlock::text("look"), ContentBlock::image("image/jpeg", PNG)];
    store.store_prompt(Some("mock"), &config(), &mut content).unwrap();
    let ContentBlock::Image { media_type, data, sha256: Some(sha256) } = &content[1] else { panic!("{content:?}") };
    assert_eq!((media_type.as_str(), data), ("image/png", &None));
    let bytes = images::decode(PNG).unwrap();
    assert_eq!(db.image(sha256).unwrap(), Some(bytes.clone()));
    assert_eq!(*sha256, sha256_hex(&bytes));
    // The same image again is the same digest, stored once.
    let mut again = vec![ContentBlock::image("image/png", PNG)];
    store.store_prompt(Some("mock"), &config(), &mut again).unwrap();
    assert_eq!(
        again,
        vec![ContentBlock::Image { media_type: "image/png".into(), data: None, sha256: Some(sha256.clone()) }]
    );

    let sha256 = sha256.clone();
    let mut messages = vec![prompt(content)];
    store.attach("mock", &config(), &mut messages);
    assert_eq!(
        messages[0].content[1],
        ContentBlock::Image { media_type: "image/png".into(), data: Some(PNG.into()), sha256: Some(sha256) }
    );
}

#[test]
fn what_no_model_could_read_is_refused_before_it_is_stored() {
    let (db, store) = new_store();
    let refused =
        |model: &str, block: ContentBlock| store.store_prompt(Some(model), &config(), &mut [block]).unwrap_err();
    assert!(refused("mock", ContentBlock::image("image/png", images::encode(b"%PDF-1.7"))).contains("not a PNG, JPEG"));
    assert!(refused("mock", ContentBlock::image("image/png", "@@@")).contains("not base64"));
    let mut huge = images::decode(PNG).unwrap();
    huge.resize(images::MAX_IMAGE_BYTES + 1, 0);
    assert!(refused("mock", ContentBlock::image("image/png", images::encode(&huge))).contains("at most"));
    let blind = refused("blind", ContentBlock::image("image/png", PNG));
    assert!(blind.contains("`blind` does not take images"), "{blind}");
    let reference = ContentBlock::Image { media_type: "image/png".into(), data: None, sha256: Some("0".repeat(64)) };
    assert!(refused("mock", reference).contains("needs its bytes"));
    let png = sha256_hex(&images::decode(PNG).unwrap());
    assert_eq!(db.image(&png).unwrap(), None, "nothing was stored");
}

#[test]
fn a_request_for_a_model_without_eyes_or_for_an_unknown_image_gets_no_bytes() {
    let (_, store) = new_store();
    let mut content = vec![ContentBlock::image("image/png", PNG)];
    store.store_prompt(Some("mock"), &config(), &mut content).unwrap();
    let mut blind = vec![prompt(content.clone())];
    store.attach("blind", &config(), &mut blind);
    assert_eq!(blind[0].content, vec![ContentBlock::text("[an image (image/png) that model `blind` does not take]")]);
    // A digest the store does not have (another kernel's, or made up) gets no bytes.
    let (_, empty) = new_store();
    let unknown = ContentBlock::Image { media_type: "image/png".into(), data: None, sha256: Some("0".repeat(64)) };
    let mut gone = vec![prompt(vec![content[0].clone(), unknown.clone()])];
    empty.attach("mock", &config(), &mut gone);
    assert!(matches!(&gone[0].content[0], ContentBlock::Image { data: None, .. }));
    assert_eq!(gone[0].content[1], unknown);
}

#[test]
fn a_tools_image_is_stored_for_a_model_that_sees_and_explained_to_one_that_does_not() {
    let (db, store) = new_store();
    let result = || ToolCallResult {
        output: "pixel.png: an image".into(),
        is_error: false,
        structured: None,
        details: None,
        images: vec![superpi_proto::ToolImage { media_type: "image/png".into(), data: PNG.into(), described: false }],
    };
    let mut seen = result();
    let blocks = store.store_result("mock", &config(), &mut seen);
    let digest = sha256_hex(&images::decode(PNG).unwrap());
    assert_eq!(
        blocks,
        vec![ContentBlock::Image { media_type: "image/png".into(), data: None, sha256: Some(digest.clone()) }]
    );
    assert!(seen.images.is_empty() && !seen.is_error, "{seen:?}");
    assert!(db.image(&digest).unwrap().is_some());

    let mut blind = result();
    assert_eq!(store.store_result("blind", &config(), &mut blind), vec![]);
    assert!(blind.is_error, "{blind:?}");
    assert!(blind.output.contains("The image is not shown") && blind.output.contains("`blind` does not take images"));
    // The bytes are read again, not trusted: a tool claiming an image that is none is refused.
    let mut fake = ToolCallResult {
        images: vec![superpi_proto::ToolImage {
            media_type: "image/png".into(),
            data: images::encode(b"text"),
            described: false,
        }],
        ..result()
    };
    assert!(store.store_result("mock", &config(), &mut fake).is_empty() && fake.is_error);

    // An image the output already describes (an MCP server's) is no error for a blind model:
    // it reads the description, and why it sees no more.
    let described = || ToolCallResult {
        output: "[image: image/png, 67 bytes]".into(),
        images: vec![superpi_proto::ToolImage { media_type: "image/png".into(), data: PNG.into(), described: true }],
        ..result()
    };
    let mut blind = described();
    assert_eq!(store.store_result("blind", &config(), &mut blind), vec![]);
    assert!(!blind.is_error, "{blind:?}");
    assert!(blind.output.starts_with("[image: image/png, 67 bytes]\n(not shown: "), "{}", blind.output);
    let mut seen = described();
    assert_eq!(store.store_result("mock", &config(), &mut seen).len(), 1);
    assert!(!seen.is_error && seen.output == "[image: image/png, 67 bytes]", "{seen:?}");
}
