//! A PostgreSQL server for tests, from the machine's PostgreSQL binaries (Debian's `postgresql`
//! package): initialised in a temporary directory and run by an unprivileged user (`nobody`
//! when the tests run as root), reachable on a Unix socket in that directory, one per test
//! process, each test on a database of its own. It stops when the test process ends, however
//! it ends: its wrapper waits for the end of a pipe the process holds, then stops the server
//! and removes the directory.
//!
//! Without the binaries the PostgreSQL tests are skipped, saying so, unless `CI` is set: then
//! they fail.

use std::io::{BufRead, BufReader, Read, Write};
use std::path::PathBuf;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Mutex, OnceLock};

/// Starts the server, stopped after the test process: read by the wrapper on the pipe.
const WRAPPER: &str = r#"
set -e
bin=$1; dir=$2
"$bin/initdb" -D "$dir/data" -U superpi -A trust -E UTF8 --no-sync >"$dir/initdb.log" 2>&1 || { cat "$dir/initdb.log" >&2; exit 1; }
"$bin/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -o "-k $dir -c listen_addresses= -F" start >/dev/null || { cat "$dir/server.log" >&2; exit 1; }
echo ready
read -r _ || true
"$bin/pg_ctl" -D "$dir/data" -m immediate -w stop >/dev/null 2>&1 || true
rm -rf "$dir"
"#;

pub struct TestPostgres {
    bin: PathBuf,
    dir: PathBuf,
    next_database: AtomicU32,
    /// The wrapper's stdin: it stops the server when this closes, at the process's end.
    _running: Mutex<(Child, ChildStdin)>,
}

/// The test process's server, started on first use; `None` (said once on stderr) when the
/// machine has no PostgreSQL binaries and `CI` is not set.
pub fn shared() -> Option<&'static TestPostgres> {
    static SERVER: OnceLock<Option<TestPostgres>> = OnceLock::new();
    SERVER
        .get_or_init(|| match binaries() {
            Some(bin) => Some(TestPostgres::start(bin)),
            None if ci() => panic!("CI is set but no PostgreSQL binaries were found (install the postgresql package)"),
            None => {
                let _ = writeln!(
                    std::io::stderr(),
                    "SKIPPING the PostgreSQL tests: no initdb found (install Debian's postgresql package, or set SUPERPI_TEST_PG_BIN)"
                );
                None
            }
        })
        .as_ref()
}

fn ci() -> bool {
    std::env::var("CI").is_ok_and(|v| !v.is_empty() && v != "false" && v != "0")
}

/// `SUPERPI_TEST_PG_BIN`, else the newest `/usr/lib/postgresql/N/bin` (Debian keeps initdb
/// out of PATH), else the directory of an initdb on PATH.
fn binaries() -> Option<PathBuf> {
    if let Some(dir) = std::env::var_os("SUPERPI_TEST_PG_BIN") {
        let dir = PathBuf::from(dir);
        assert!(dir.join("initdb").is_file(), "SUPERPI_TEST_PG_BIN={} holds no initdb", dir.display());
        return Some(dir);
    }
    let mut versions: Vec<(u32, PathBuf)> = std::fs::read_dir("/usr/lib/postgresql")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| Some((e.file_name().to_str()?.parse().ok()?, e.path().join("bin"))))
        .filter(|(_, bin)| bin.join("initdb").is_file())
        .collect();
    versions.sort();
    if let Some((_, bin)) = versions.pop() {
        return Some(bin);
    }
    std::env::split_paths(&std::env::var_os("PATH")?).find(|dir| dir.join("initdb").is_file())
}

impl TestPostgres {
    fn start(bin: PathBuf) -> TestPostgres {
        let dir = tempfile::Builder::new().prefix("superpi-pg").tempdir().expect("a temporary directory").keep();
        let root = nix::unistd::geteuid().is_root();
        let mut command = if root {
            // PostgreSQL refuses to run as root: the server is nobody's, in a directory it owns.
            std::os::unix::fs::chown(&dir, Some(65534), Some(65534)).expect("giving the directory to nobody");
            let mut c = Command::new("setpriv");
            c.args(["--reuid=65534", "--regid=65534", "--clear-groups", "--", "sh"]);
            c
        } else {
            Command::new("sh")
        };
        let mut child = command
            .arg("-c")
            .arg(WRAPPER)
            .arg("sh")
            .arg(&bin)
            .arg(&dir)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("starting the PostgreSQL wrapper (sh, setpriv)");
        let mut ready = String::new();
        let stdout = child.stdout.take().expect("the wrapper's stdout");
        let _ = BufReader::new(stdout).read_line(&mut ready);
        if ready.trim() != "ready" {
            let mut err = Vec::new();
            if let Some(mut stderr) = child.stderr.take() {
                let _ = stderr.read_to_end(&mut err);
            }
            panic!("the test PostgreSQL server did not start ({}): {}", bin.display(), String::from_utf8_lossy(&err));
        }
        let stdin = child.stdin.take().expect("the wrapper's stdin");
        TestPostgres { bin, dir, next_database: AtomicU32::new(1), _running: Mutex::new((child, stdin)) }
    }

    /// What `psql` prints for one query on a database (unaligned, tuples only, trimmed): for
    /// tests that read what a kernel stored.
    #[allow(dead_code)] // the end-to-end tests' (tests/), not the kernel's own
    pub fn query(&self, url: &str, sql: &str) -> String {
        let out = Command::new(self.bin.join("psql"))
            .args(["-X", "-A", "-t", "-v", "ON_ERROR_STOP=1", "-d", url, "-c", sql])
            .output()
            .expect("running psql");
        assert!(out.status.success(), "psql {sql:?}: {}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    }

    /// A new empty database, as a connection string.
    pub fn new_database(&self) -> String {
        let name = format!("t{}_{}", std::process::id(), self.next_database.fetch_add(1, Ordering::Relaxed));
        let status = Command::new(self.bin.join("createdb"))
            .args(["-h"])
            .arg(&self.dir)
            .args(["-U", "superpi", &name])
            .status()
            .expect("running createdb");
        assert!(status.success(), "createdb {name} failed");
        format!("host={} user=superpi dbname={name}", self.dir.display())
    }
}
