//! Images of prompts: checked and stored once in the store (by SHA-256) when a prompt is
//! submitted, named by their digest in entries and events (a conversation's history stays
//! small however many screenshots it holds), and read back into each model request for a
//! model that takes them. In the store, not the data directory, so a kernel that continues a
//! conversation on a shared database has its images too.

use std::sync::Arc;

use sha2::{Digest as _, Sha256};
use superpi_proto::tool::ToolCallResult;
use superpi_proto::{ContentBlock, Message};
use superpi_providers::{ProvidersConfig, images};

use superpi_store::Store;

/// The images of prompts, kept in the kernel's store.
#[derive(Clone)]
pub(crate) struct ImageStore {
    store: Arc<dyn Store>,
}

impl ImageStore {
    pub fn new(store: Arc<dyn Store>) -> Self {
        ImageStore { store }
    }

    /// Checks each image a prompt gives by its bytes (a format every vendor takes, read from
    /// the bytes; at most [`images::MAX_IMAGE_BYTES`]; a model that takes it, unless `model` is
    /// `None`: an agent backend's turn, whose program judges) and stores it, leaving its digest
    /// in place of its bytes. The error is the client's to read.
    pub fn store_prompt(
        &self,
        model: Option<&str>,
        config: &ProvidersConfig,
        content: &mut [ContentBlock],
    ) -> Result<(), String> {
        for block in content.iter_mut() {
            let ContentBlock::Image { media_type, data, sha256 } = block else { continue };
            let Some(encoded) = data.take() else {
                return Err("an image needs its bytes in `data` (base64)".into());
            };
            let (found, digest) = self.store_one(model, config, media_type, &encoded)?;
            *media_type = found.to_string();
            *sha256 = Some(digest);
        }
        Ok(())
    }

    /// The images a tool returned (the `read` tool's image file, an MCP server's image
    /// content), checked and stored like a prompt's, as the image blocks that follow its result
    /// in the model's history. One the turn's model cannot take makes the result an error that
    /// says why, so the model reads the reason rather than nothing; one the output already
    /// describes only adds why it is not shown.
    pub fn store_result(
        &self,
        model: &str,
        config: &ProvidersConfig,
        result: &mut ToolCallResult,
    ) -> Vec<ContentBlock> {
        let mut blocks = Vec::new();
        for image in std::mem::take(&mut result.images) {
            match self.store_one(Some(model), config, &image.media_type, &image.data) {
                Ok((media_type, digest)) => blocks.push(ContentBlock::Image {
                    media_type: media_type.to_string(),
                    data: None,
                    sha256: Some(digest),
                }),
                Err(why) if image.described => result.output = format!("{}\n(not shown: {why})", result.output),
                Err(why) => {
                    result.is_error = true;
                    result.output = format!("{}\nThe image is not shown: {why}", result.output);
                }
            }
        }
        blocks
    }

    /// A stored image's bytes, as base64 (`None` when the store has none by that digest).
    pub fn encoded(&self, sha256: &str) -> Result<Option<String>, String> {
        Ok(self.store.image(sha256).map_err(|e| e.to_string())?.map(|bytes| images::encode(&bytes)))
    }

    /// Checks one image by its bytes (a format every vendor takes, read from the bytes; at most
    /// [`images::MAX_IMAGE_BYTES`]; `model`, when named, takes it) and stores it: its format and
    /// digest.
    fn store_one(
        &self,
        model: Option<&str>,
        config: &ProvidersConfig,
        declared: &str,
        encoded: &str,
    ) -> Result<(&'static str, String), String> {
        let bytes = images::decode(encoded)?;
        if bytes.len() > images::MAX_IMAGE_BYTES {
            return Err(format!(
                "the image is {} bytes; at most {} are taken (5 MiB)",
                bytes.len(),
                images::MAX_IMAGE_BYTES
            ));
        }
        let Some(found) = images::media_type_of(&bytes) else {
            return Err(format!("the image (declared {declared}) is not a PNG, JPEG, GIF or WebP image"));
        };
        if let Some(why) = model.and_then(|model| images::refusal(model, found, config)) {
            return Err(why);
        }
        let digest = sha256_hex(&bytes);
        self.store.put_image(&digest, found, &bytes).map_err(|err| format!("the image could not be stored: {err}"))?;
        Ok((found, digest))
    }

    /// The messages of a model request with their images' bytes, for `model`: an image that
    /// model does not take (the conversation switched models) becomes a line saying so; one
    /// the store does not have keeps no data (the vendor modules send a line saying so).
    pub fn attach(&self, model: &str, config: &ProvidersConfig, messages: &mut [Message]) {
        for message in messages.iter_mut() {
            for block in message.content.iter_mut() {
                let ContentBlock::Image { media_type, data, sha256: Some(sha256) } = block else { continue };
                if data.is_some() {
                    continue;
                }
                if images::refusal(model, media_type, config).is_some() {
                    *block =
                        ContentBlock::text(format!("[an image ({media_type}) that model `{model}` does not take]"));
                    continue;
                }
                match self.store.image(sha256) {
                    Ok(Some(bytes)) => *data = Some(images::encode(&bytes)),
                    Ok(None) => tracing::warn!(%sha256, "an image names no stored image"),
                    Err(err) => tracing::warn!(%sha256, %err, "a stored image could not be read"),
                }
            }
        }
    }
}

/// The SHA-256 of bytes as lowercase hex: how images are named, and trigger tokens kept.
pub(crate) fn sha256_hex(bytes: &[u8]) -> String {
    Sha256::digest(bytes).iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
#[path = "images_tests.rs"]
mod tests;
