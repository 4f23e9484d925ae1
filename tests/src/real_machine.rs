//! A developer's own machine (tests/tests/real_machines.rs, tests/tests/doctor.rs): a home
//! directory with rustup's layout (a hard-linked copy of this machine's `~/.cargo` and
//! `~/.rustup`, cached crates in `~/.cargo/registry`), pyenv's python, a `~/.gitconfig`, a
//! repository under the home directory, and a secret in every denied location; superpi run in
//! it as root or as an ordinary user (setpriv, as sandbox/tests/nonroot.rs).
//!
//! It needs what CI has: root, setpriv, git, rustup's cargo in /root/.cargo with `itoa` in
//! its registry, python3 with pytest, Go (Debian's python3-pytest and golang-go).

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::superpi_bin;

pub const NOBODY: &str = "65534";

/// Every secret location of the default deny list that the fixture fills, relative to home.
pub const SECRETS: &[&str] = &[
    ".ssh/id_ed25519",
    ".gnupg/private-keys-v1.d/key",
    ".aws/credentials",
    ".azure/accessTokens.json",
    ".config/gcloud/credentials.db",
    ".config/gh/hosts.yml",
    ".netrc",
    ".git-credentials",
    ".config/git/credentials",
    ".npmrc",
    ".pypirc",
    ".cargo/credentials.toml",
    ".docker/config.json",
    ".kube/config",
    ".password-store/mail.gpg",
    ".mozilla/firefox/profile/logins.json",
    ".config/google-chrome/Default/Cookies",
    ".local/share/keyrings/login.keyring",
    ".bash_history",
    ".zsh_history",
    ".local/share/superpi/notes",
    ".config/superpi/notes",
];

/// The Go module the fixture's Go project needs, from the module cache.
const GO_DEP: &str = "example.test/greet";
const GO_DEP_VERSION: &str = "v1.0.0";

/// Fills `home`'s Go module cache with [`GO_DEP`] (through `go mod download` from a proxy in a
/// directory, the file layout of GOPROXY's protocol) and writes the workspace's `go.sum`.
fn fill_go_module_cache(home: &Path, workspace: &Path) {
    let proxy = home.with_file_name("goproxy");
    let versions = proxy.join(GO_DEP).join("@v");
    write(&versions.join("list"), &format!("{GO_DEP_VERSION}\n"));
    write(&versions.join(format!("{GO_DEP_VERSION}.info")), &format!("{{\"Version\":\"{GO_DEP_VERSION}\"}}\n"));
    let module = format!("module {GO_DEP}\n\ngo 1.19\n");
    write(&versions.join(format!("{GO_DEP_VERSION}.mod")), &module);
    // The zip's entries are MODULE@VERSION/FILE.
    let source = proxy.join("src");
    let root = source.join(format!("{GO_DEP}@{GO_DEP_VERSION}"));
    write(&root.join("go.mod"), &module);
    write(&root.join("greet.go"), "package greet\n\nfunc Hello() string { return \"hello\" }\n");
    let zip = versions.join(format!("{GO_DEP_VERSION}.zip"));
    let script = "import sys, zipfile, os\nz = zipfile.ZipFile(sys.argv[1], 'w')\nos.chdir(sys.argv[2])\n\
                  for d, _, fs in os.walk('.'):\n    for f in fs:\n        z.write(os.path.join(d, f)[2:])\nz.close()\n";
    sh(Command::new("/usr/bin/python3").args(["-c", script]).arg(&zip).arg(&source));
    sh(Command::new("go")
        .args(["mod", "download", "-x", GO_DEP])
        .current_dir(workspace)
        .env("HOME", home)
        .env("GOPATH", home.join("go"))
        .env("GOCACHE", proxy.join("build-cache"))
        .env("GOPROXY", format!("file://{}", proxy.display()))
        .env("GOSUMDB", "off")
        .env("GOFLAGS", "-mod=mod"));
    // `go mod download` of a named module leaves go.sum to `go mod tidy`'s rules: write it.
    sh(Command::new("go")
        .args(["mod", "tidy"])
        .current_dir(workspace)
        .env("HOME", home)
        .env("GOPATH", home.join("go"))
        .env("GOCACHE", proxy.join("build-cache"))
        .env("GOPROXY", "off")
        .env("GOSUMDB", "off"));
}

/// The machine: its home and workspace, removed when dropped (after its kernel stopped).
pub struct Machine {
    _root: tempfile::TempDir,
    pub home: PathBuf,
    pub workspace: PathBuf,
    /// As whom superpi runs: None for root.
    pub user: Option<&'static str>,
    /// pyenv's python's `bin`.
    pub python: PathBuf,
}

pub fn sh(cmd: &mut Command) {
    let out = cmd.output().unwrap();
    assert!(out.status.success(), "{cmd:?}: {}", String::from_utf8_lossy(&out.stderr));
}

pub fn write(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

impl Machine {
    /// Builds it, owned by `user` (None: root). Needs root.
    pub fn new(user: Option<&'static str>) -> Machine {
        assert_eq!(unsafe { libc::geteuid() }, 0, "these tests start as root, as CI does");
        let root = tempfile::tempdir().unwrap();
        let base = root.path().canonicalize().unwrap();
        std::fs::set_permissions(&base, std::fs::Permissions::from_mode(0o755)).unwrap();
        let home = base.join("home");
        let workspace = home.join("src/demo");
        write(
            &home.join(".gitconfig"),
            "[user]\n\tname = Dev Eloper\n\temail = dev@example.test\n[credential]\n\thelper = store\n",
        );
        for secret in SECRETS {
            write(&home.join(secret), &format!("SECRET {secret}\n"));
        }
        // A crate with a dependency from the registry, a unittest, an npm project.
        write(
            &workspace.join("Cargo.toml"),
            "[package]\nname = \"demo\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n[dependencies]\nitoa = \"1\"\n",
        );
        write(
            &workspace.join("src/lib.rs"),
            "pub fn show(n: u32) -> String { itoa::Buffer::new().format(n).to_string() }\n\n#[test]\nfn shows() { assert_eq!(show(42), \"42\"); }\n",
        );
        write(
            &workspace.join("test_demo.py"),
            "import unittest\n\nclass T(unittest.TestCase):\n    def test_add(self):\n        self.assertEqual(1 + 1, 2)\n",
        );
        write(
            &workspace.join("package.json"),
            r#"{"name": "demo", "version": "1.0.0", "scripts": {"test": "node test.js"}}"#,
        );
        write(&workspace.join("node_modules/leftpad/index.js"), "module.exports = (s, n) => s.padStart(n);\n");
        write(
            &workspace.join("test.js"),
            "const pad = require('leftpad');\nif (pad('a', 3) !== '  a') process.exit(1);\nconsole.log('npm test passed');\n",
        );
        // A Go module whose dependency is in the module cache (~/go/pkg/mod), put there as
        // `go mod download` would from a proxy.
        write(&workspace.join("go.mod"), &format!("module demo\n\ngo 1.19\n\nrequire {GO_DEP} {GO_DEP_VERSION}\n"));
        write(
            &workspace.join("demo_test.go"),
            &format!(
                "package demo\n\nimport (\n\t\"testing\"\n\n\t\"{GO_DEP}\"\n)\n\n\
                 func TestGreet(t *testing.T) {{\n\tif greet.Hello() != \"hello\" {{\n\t\tt.Fatal(greet.Hello())\n\t}}\n}}\n"
            ),
        );
        fill_go_module_cache(&home, &workspace);
        write(&workspace.join(".gitignore"), "target/\nnode_modules/\n__pycache__/\n.pytest_cache/\nout/\n");
        sh(Command::new("git").args(["init", "-q", "-b", "main"]).current_dir(&workspace));
        sh(Command::new("git").args(["add", "-A"]).current_dir(&workspace).env("HOME", &home));
        sh(Command::new("git").args(["commit", "-qm", "init"]).current_dir(&workspace).env("HOME", &home));
        std::fs::create_dir_all(home.join(".rustup/toolchains")).unwrap();
        std::fs::create_dir_all(home.join(".pyenv/versions")).unwrap();
        if let Some(user) = user {
            sh(Command::new("chown").args(["-R", &format!("{user}:{user}")]).arg(&base));
        }
        // The toolchains: hard links to this machine's (root's, readable by all; chown would
        // change the originals, so they stay root's, as a system-wide install would be).
        let rustup = Path::new("/root/.rustup");
        let settings = std::fs::read_to_string(rustup.join("settings.toml")).unwrap();
        let toolchain = settings
            .lines()
            .find_map(|l| l.strip_prefix("default_toolchain = "))
            .map(|t| t.trim_matches('"').to_string())
            .unwrap();
        std::fs::copy(rustup.join("settings.toml"), home.join(".rustup/settings.toml")).unwrap();
        sh(Command::new("cp").arg("-a").arg(rustup.join("update-hashes")).arg(home.join(".rustup/")));
        sh(Command::new("cp")
            .arg("-al")
            .arg(rustup.join("toolchains").join(&toolchain))
            .arg(home.join(".rustup/toolchains/")));
        for dir in ["bin", "registry"] {
            sh(Command::new("cp").arg("-al").arg(Path::new("/root/.cargo").join(dir)).arg(home.join(".cargo/")));
        }
        // pyenv's builds here link libpython by their absolute path, so a copy elsewhere cannot
        // start: the home's python is the system's interpreter in pyenv's layout (it finds its
        // standard library by its build prefix).
        let system = std::fs::canonicalize("/usr/bin/python3").unwrap();
        let python = home.join(".pyenv/versions/system/bin");
        std::fs::create_dir_all(&python).unwrap();
        sh(Command::new("cp").arg(&system).arg(python.join("python3")));
        if let Some(user) = user {
            sh(Command::new("chown").args(["-R", &format!("{user}:{user}")]).arg(home.join(".pyenv")));
        }
        Machine { _root: root, home, workspace, user, python }
    }

    /// `superpi ARGS` in the workspace, as the machine's user, with its home and PATH.
    pub fn superpi(&self, args: &[&str]) -> Command {
        let mut cmd = match self.user {
            Some(user) => {
                let mut c = Command::new("setpriv");
                c.args(["--reuid", user, "--regid", user, "--clear-groups", "--"]).arg(superpi_bin());
                c
            }
            None => Command::new(superpi_bin()),
        };
        let home = &self.home;
        let path =
            format!("{h}/.cargo/bin:{p}:/usr/local/bin:/usr/bin:/bin", h = home.display(), p = self.python.display());
        cmd.args(args)
            .current_dir(&self.workspace)
            .env_clear()
            .env("HOME", home)
            .env("PATH", path)
            .env("SUPERPI_DATA_DIR", home.join(".local/share/superpi"))
            .env("SUPERPI_CONFIG_DIR", home.join(".config/superpi"))
            .env("SUPERPI_RUNTIME_DIR", home.with_file_name("run"))
            .env("RUST_LOG", "warn");
        cmd
    }

    /// One bash call through `superpi run` in auto mode; the command writes what the test
    /// reads into the workspace (the mock model's answer is short).
    pub fn bash(&self, command: &str) {
        let call = serde_json::json!({ "command": command, "timeout": 600 });
        let out = self.superpi(&["run", "--mode", "auto", &format!("@tool bash {call}")]).output().unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    }

    /// What a call wrote to `out/NAME` in the workspace (empty when nothing).
    pub fn out(&self, name: &str) -> String {
        std::fs::read_to_string(self.workspace.join("out").join(name)).unwrap_or_default()
    }
}

impl Drop for Machine {
    fn drop(&mut self) {
        if !crate::superpi_bin_checked() {
            return; // no kernel was started, and asking for the binary would panic again
        }
        let _ = self.superpi(&["kernel", "stop"]).output();
    }
}
