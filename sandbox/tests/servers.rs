//! A long-lived server (an MCP server) starts wherever it is installed: the files of its
//! program and script arguments are readable to it without `extra_read_paths`, the secrets of
//! the home directory are not.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use common::root_env;
use superpi_sandbox::ServerSpec;
use tokio::io::AsyncReadExt;

#[tokio::test]
async fn a_server_reads_its_own_node_modules_and_no_secret() {
    let env = root_env();
    let modules = env.root.path().canonicalize().unwrap().join("installed/node_modules");
    std::fs::create_dir_all(modules.join("server")).unwrap();
    std::fs::create_dir_all(modules.join("dep")).unwrap();
    std::fs::write(modules.join("dep/index.js"), "module.exports = 'dep loaded';\n").unwrap();
    let secret = env.home.join(".ssh/id_rsa");
    std::fs::write(
        modules.join("server/index.js"),
        format!(
            "let out = require('../dep');\ntry {{ require('fs').readFileSync({secret:?}); out += ' SECRET READ'; }} \
             catch (e) {{ out += ' ' + e.code; }}\nconsole.log(out);\n",
            secret = secret.display().to_string()
        ),
    )
    .unwrap();
    let spec = ServerSpec {
        program: "node".into(),
        args: vec![modules.join("server/index.js").display().to_string()],
        env: Vec::new(),
        cwd: None,
        workspace: env.workspace.clone(),
        network: false,
        state_dir: None,
        readable: Vec::new(),
    };
    let mut server = env.sandbox.start_server(spec).await.unwrap();
    let mut out = String::new();
    server.stdout.read_to_string(&mut out).await.unwrap();
    let mut err = String::new();
    server.stderr.read_to_string(&mut err).await.unwrap();
    assert_eq!(out, "dep loaded EACCES\n", "{err}");
}
