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
bin=$1; dir=$2; port=$3
"$bin/initdb" -D "$dir/data" -U superpi -A trust -E UTF8 --no-sync >"$dir/initdb.log" 2>&1 || { cat "$dir/initdb.log" >&2; exit 1; }
opts="-k $dir -c listen_addresses= -F"
if [ -n "$port" ]; then
    # TLS on 127.0.0.1:$port with a certificate for "localhost" from a CA of its own.
    cd "$dir"
    ec="-newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes"
    {
        openssl req -x509 $ec -keyout ca.key -out ca.pem -days 2 -subj /CN=superpi-test-ca \
            -addext basicConstraints=critical,CA:TRUE -addext keyUsage=critical,keyCertSign &&
        openssl req $ec -keyout server.key -out server.csr -subj /CN=localhost &&
        printf 'subjectAltName=DNS:localhost\nextendedKeyUsage=serverAuth\nbasicConstraints=CA:FALSE\n' >server.ext &&
        openssl x509 -req -in server.csr -CA ca.pem -CAkey ca.key -CAcreateserial -out server.pem -days 2 -extfile server.ext
    } >openssl.log 2>&1 || { cat openssl.log >&2; exit 1; }
    chmod 600 server.key
    opts="-k $dir -c listen_addresses=127.0.0.1 -p $port -c ssl=on -c ssl_cert_file=$dir/server.pem -c ssl_key_file=$dir/server.key -F"
fi
"$bin/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -o "$opts" start >/dev/null || { cat "$dir/server.log" >&2; exit 1; }
echo ready
read -r _ || true
"$bin/pg_ctl" -D "$dir/data" -m immediate -w stop >/dev/null 2>&1 || true
rm -rf "$dir"
"#;

pub struct TestPostgres {
    bin: PathBuf,
    dir: PathBuf,
    /// The TLS server's TCP port on 127.0.0.1 (its Unix socket is named by it too).
    port: Option<u16>,
    next_database: AtomicU32,
    /// The wrapper's stdin: it stops the server when this closes, at the process's end.
    _running: Mutex<(Child, ChildStdin)>,
}

/// The test process's server, started on first use; `None` (said once on stderr) when the
/// machine has no PostgreSQL binaries and `CI` is not set.
pub fn shared() -> Option<&'static TestPostgres> {
    static SERVER: OnceLock<Option<TestPostgres>> = OnceLock::new();
    SERVER.get_or_init(|| found(|bin| TestPostgres::start(bin, None))).as_ref()
}

/// The test process's server that also takes TLS connections on 127.0.0.1 (a certificate for
/// `localhost` from a CA of its own, [`TestPostgres::ca_file`]; `openssl` makes them), started
/// on first use; `None` like [`shared`], and also without `openssl` unless `CI` is set.
#[allow(dead_code)] // the kernel's store tests', not the end-to-end tests'
pub fn shared_tls() -> Option<&'static TestPostgres> {
    static SERVER: OnceLock<Option<TestPostgres>> = OnceLock::new();
    SERVER
        .get_or_init(|| {
            let openssl = Command::new("openssl").arg("version").stdout(Stdio::null()).status();
            if !openssl.is_ok_and(|s| s.success()) {
                assert!(!ci(), "CI is set but there is no openssl to make the test server's certificates");
                let _ = writeln!(std::io::stderr(), "SKIPPING the PostgreSQL TLS tests: no openssl");
                return None;
            }
            let port =
                std::net::TcpListener::bind("127.0.0.1:0").and_then(|l| l.local_addr()).expect("a free port").port();
            found(|bin| TestPostgres::start(bin, Some(port)))
        })
        .as_ref()
}

fn found(start: impl FnOnce(PathBuf) -> TestPostgres) -> Option<TestPostgres> {
    match binaries() {
        Some(bin) => Some(start(bin)),
        None if ci() => panic!("CI is set but no PostgreSQL binaries were found (install the postgresql package)"),
        None => {
            let _ = writeln!(
                std::io::stderr(),
                "SKIPPING the PostgreSQL tests: no initdb found (install Debian's postgresql package, or set SUPERPI_TEST_PG_BIN)"
            );
            None
        }
    }
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
    fn start(bin: PathBuf, port: Option<u16>) -> TestPostgres {
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
            .arg(port.map(|p| p.to_string()).unwrap_or_default())
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
        TestPostgres { bin, dir, port, next_database: AtomicU32::new(1), _running: Mutex::new((child, stdin)) }
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

    /// A new empty database, as a connection string (on the Unix socket).
    pub fn new_database(&self) -> String {
        let name = format!("t{}_{}", std::process::id(), self.next_database.fetch_add(1, Ordering::Relaxed));
        let port = self.port.unwrap_or(5432).to_string();
        let status = Command::new(self.bin.join("createdb"))
            .args(["-h"])
            .arg(&self.dir)
            .args(["-p", &port, "-U", "superpi", &name])
            .status()
            .expect("running createdb");
        assert!(status.success(), "createdb {name} failed");
        format!("host={} port={port} user=superpi dbname={name}", self.dir.display())
    }

    /// The database of `url` (from [`TestPostgres::new_database`]) over TCP to 127.0.0.1, the
    /// server named `host` (for TLS), with these settings added (`sslmode=...`).
    #[allow(dead_code)] // the kernel's store tests', not the end-to-end tests'
    pub fn over_tcp(&self, url: &str, host: &str, settings: &str) -> String {
        let unix = format!("host={} ", self.dir.display());
        assert!(self.port.is_some() && url.starts_with(&unix), "{url} is not a database of the TLS server");
        format!("host={host} hostaddr=127.0.0.1 {} {settings}", &url[unix.len()..])
    }

    /// The CA that issued the TLS server's certificate (PEM).
    #[allow(dead_code)] // the kernel's store tests', not the end-to-end tests'
    pub fn ca_file(&self) -> PathBuf {
        self.dir.join("ca.pem")
    }
}
