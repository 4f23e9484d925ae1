use super::{clean_npmrc, clean_pip_conf, clean_uv_toml, write_cleaned};

#[test]
fn an_npmrc_keeps_its_registry_and_proxy_and_loses_every_token() {
    let npmrc = "registry=https://npm.corp.example/\n@corp:registry=https://npm.corp.example/corp/\n\
        //npm.corp.example/:_authToken=SECRET1\n_auth=SECRET2\n_authToken = SECRET3\n\
        https-proxy=http://proxy.corp:3128\n//registry.npmjs.org/:_password=SECRET4\nusername=me\ncafile=/etc/corp.pem\n";
    let clean = clean_npmrc(npmrc);
    assert!(!clean.contains("SECRET"), "{clean}");
    assert!(!clean.contains("username"), "{clean}");
    for kept in
        ["registry=https://npm.corp.example/", "@corp:registry=", "https-proxy=http://proxy.corp:3128", "cafile="]
    {
        assert!(clean.contains(kept), "{kept} missing from {clean}");
    }
}

#[test]
fn a_pip_conf_keeps_its_index_without_the_password() {
    let conf = "[global]\nindex-url = https://me:SECRET@pypi.corp.example/simple\n\
        extra-index-url = https://pypi.org/simple https://u:SECRET@x.example/s\nproxy = http://proxy:3128\nclient-cert = /k.pem\n";
    let clean = clean_pip_conf(conf);
    assert!(!clean.contains("SECRET") && !clean.contains("client-cert"), "{clean}");
    assert!(clean.contains("index-url = https://pypi.corp.example/simple"), "{clean}");
    assert!(clean.contains("https://pypi.org/simple https://x.example/s"), "{clean}");
    assert!(clean.contains("proxy = http://proxy:3128"), "{clean}");
}

#[test]
fn the_copies_go_to_the_state_dir_and_are_named_by_their_variables() {
    let home = tempfile::tempdir().unwrap();
    let state = home.path().join("state");
    assert!(write_cleaned(home.path(), &state).is_empty());
    std::fs::write(home.path().join(".npmrc"), "registry=https://r.example/\n//r.example/:_authToken=T\n").unwrap();
    let vars = write_cleaned(home.path(), &state);
    assert_eq!(vars, vec![("NPM_CONFIG_USERCONFIG".to_string(), state.join("npmrc").to_string_lossy().into_owned())]);
    assert_eq!(std::fs::read_to_string(state.join("npmrc")).unwrap(), "registry=https://r.example/\n");
}

#[test]
fn a_uv_toml_keeps_its_indexes_without_the_password() {
    let toml = "native-tls = true\n[[index]]\nname = \"corp\"\nurl = \"https://me:SECRET@pypi.corp.example/simple\"\n\
        default = true\n[pip]\nextra-index-url = [\"https://tok@x.example/s\", \"https://pypi.org/simple\"]\n";
    let clean = clean_uv_toml(toml);
    assert!(!clean.contains("SECRET") && !clean.contains("tok@"), "{clean}");
    assert_eq!(
        clean,
        "native-tls = true\n[[index]]\nname = \"corp\"\nurl = \"https://pypi.corp.example/simple\"\ndefault = true\n\
         [pip]\nextra-index-url = [\"https://x.example/s\", \"https://pypi.org/simple\"]\n"
    );
}

#[test]
fn a_uv_toml_copy_is_named_by_uv_config_file() {
    let home = tempfile::tempdir().unwrap();
    let state = home.path().join("state");
    std::fs::create_dir_all(home.path().join(".config/uv")).unwrap();
    std::fs::write(home.path().join(".config/uv/uv.toml"), "index-url = \"https://u:T@r.example/simple\"\n").unwrap();
    let vars = write_cleaned(home.path(), &state);
    assert_eq!(vars, vec![("UV_CONFIG_FILE".to_string(), state.join("uv.toml").to_string_lossy().into_owned())]);
    assert_eq!(std::fs::read_to_string(state.join("uv.toml")).unwrap(), "index-url = \"https://r.example/simple\"\n");
}
