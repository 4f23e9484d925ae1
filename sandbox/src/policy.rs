//! The landlock policy of a call, as data, and the ruleset built from it in the parent.

use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::path::{Path, PathBuf};

use landlock::{
    ABI, Access, AccessFs, AccessNet, BitFlags, CompatLevel, Compatible, PathBeneath, PathFd, Ruleset, RulesetAttr,
    RulesetCreatedAttr, Scope, path_beneath_rules,
};

/// Device nodes a call may read, write and (for terminals) control.
pub const DEFAULT_DEVICES: &[&str] =
    &["/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom", "/dev/tty", "/dev/ptmx", "/dev/pts"];

/// Files that root may read by ownership alone and that hold secrets: hidden behind /dev/null
/// in the call's mount namespace.
pub fn masked_files() -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> =
        ["/etc/shadow", "/etc/gshadow", "/etc/shadow-", "/etc/gshadow-", "/etc/security/opasswd"]
            .iter()
            .map(PathBuf::from)
            .collect();
    if let Ok(dir) = std::fs::read_dir("/etc/ssh") {
        for entry in dir.filter_map(Result::ok) {
            let name = entry.file_name().to_string_lossy().into_owned();
            if name.starts_with("ssh_host_") && name.ends_with("_key") {
                files.push(entry.path());
            }
        }
    }
    files.retain(|f| f.is_file());
    files
}

/// The filesystem policy of one call.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FsPolicy {
    /// Read and execute.
    pub read_exec: Vec<PathBuf>,
    /// Read only (no execute): spill files of the conversation, for instance.
    pub read_only: Vec<PathBuf>,
    /// Everything: the workspace roots and the call's temp dir.
    pub read_write: Vec<PathBuf>,
    /// Devices: read, write, ioctl.
    pub devices: Vec<PathBuf>,
}

/// The paths every call of a kernel gets, opened once (O_PATH): the read grants of
/// `reads.rs` (system directories, the home directory's entries less the secrets,
/// `extra_read_paths`) and the shell (read and execute), and the devices. Opening and checking
/// some twenty paths on every call cost a tenth of a millisecond.
#[derive(Debug)]
pub(crate) struct OpenedPaths {
    read_exec: Vec<PathFd>,
    devices: Vec<PathFd>,
    /// Which computation of the grants these are (a ruleset made from older ones is not used).
    pub(crate) generation: u64,
    grants: crate::reads::ReadGrants,
}

impl OpenedPaths {
    fn open(grants: crate::reads::ReadGrants, also: &[PathBuf], devices: &[PathBuf], generation: u64) -> OpenedPaths {
        let open = |paths: &[PathBuf]| -> Vec<PathFd> { existing(paths).filter_map(|p| PathFd::new(p).ok()).collect() };
        let mut read_exec = open(&grants.granted);
        read_exec.extend(open(also));
        OpenedPaths { read_exec, devices: open(devices), generation, grants }
    }
}

/// The landlock ABI of the running kernel (0 when landlock is missing or disabled at boot).
pub fn landlock_abi() -> i32 {
    // SAFETY: the documented version query: null attributes, size 0, flag VERSION.
    let ret = unsafe {
        libc::syscall(
            libc::SYS_landlock_create_ruleset,
            std::ptr::null::<u8>(),
            0usize,
            1u32, // LANDLOCK_CREATE_RULESET_VERSION
        )
    };
    if ret < 0 { 0 } else { ret as i32 }
}

#[derive(Debug, thiserror::Error)]
#[error("landlock: {0}")]
pub struct PolicyError(String);

fn err(e: impl std::fmt::Display) -> PolicyError {
    PolicyError(e.to_string())
}

fn beneath(
    fds: &[PathFd],
    access: BitFlags<AccessFs>,
) -> impl Iterator<Item = Result<PathBeneath<BorrowedFd<'_>>, landlock::RulesetError>> {
    fds.iter().map(move |fd| Ok(PathBeneath::new(fd.as_fd(), access)))
}

fn existing(paths: &[PathBuf]) -> impl Iterator<Item = &Path> {
    paths.iter().map(PathBuf::as_path).filter(|p| p.exists())
}

/// Builds the ruleset for one call (the kernel's `opened` paths and the call's `policy`) and
/// returns its descriptor, ready for `landlock_restrict_self` in the child.
pub(crate) fn build_ruleset(
    opened: &OpenedPaths,
    policy: &FsPolicy,
    abi_version: i32,
    network: bool,
) -> Result<OwnedFd, PolicyError> {
    let abi = ABI::from(abi_version);
    let mut ruleset = Ruleset::default()
        .set_compatibility(CompatLevel::BestEffort)
        .handle_access(AccessFs::from_all(abi))
        .map_err(err)?
        .scope(Scope::from_all(abi))
        .map_err(err)?;
    if !network {
        ruleset = ruleset.handle_access(AccessNet::from_all(abi)).map_err(err)?;
    }
    let read_exec = AccessFs::from_read(abi);
    let read_only = AccessFs::ReadFile | AccessFs::ReadDir;
    let device = AccessFs::ReadFile | AccessFs::WriteFile | AccessFs::IoctlDev | AccessFs::Truncate;
    let created = ruleset
        .create()
        .map_err(err)?
        .add_rules(beneath(&opened.read_exec, read_exec))
        .map_err(err)?
        .add_rules(beneath(&opened.devices, device))
        .map_err(err)?
        .add_rules(path_beneath_rules(existing(&policy.read_exec), read_exec))
        .map_err(err)?
        .add_rules(path_beneath_rules(existing(&policy.read_only), read_only))
        .map_err(err)?
        .add_rules(path_beneath_rules(existing(&policy.devices), device))
        .map_err(err)?
        .add_rules(path_beneath_rules(existing(&policy.read_write), AccessFs::from_all(abi)))
        .map_err(err)?;
    let fd: Option<OwnedFd> = created.into();
    fd.ok_or_else(|| PolicyError("the kernel does not enforce landlock".into()))
}

/// A call's landlock rules but for its own temp dir, with the identity (device and inode) each
/// path had: a ruleset made for one call serves a later one with the same rules and the same
/// temp dir, and a path made again or appearing since (a conversation's first spill) gets a
/// new ruleset.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct RulesetKey {
    policy: FsPolicy,
    network: bool,
    identity: Vec<Option<(u64, u64)>>,
    generation: u64,
}

impl RulesetKey {
    pub(crate) fn new(policy: FsPolicy, network: bool, generation: u64) -> RulesetKey {
        use std::os::unix::fs::MetadataExt;
        let paths = policy.read_exec.iter().chain(&policy.read_only).chain(&policy.read_write).chain(&policy.devices);
        let identity = paths.map(|p| std::fs::metadata(p).ok().map(|m| (m.dev(), m.ino()))).collect();
        RulesetKey { policy, network, identity, generation }
    }
}

/// Makes rulesets: the kernel's own paths opened once (again when the home directory's
/// entries change), and the landlock ABI.
#[derive(Debug)]
pub(crate) struct Rulesets {
    opened: std::sync::Mutex<std::sync::Arc<OpenedPaths>>,
    roots: Vec<PathBuf>,
    denied: crate::reads::Denied,
    also: Vec<PathBuf>,
    devices: Vec<PathBuf>,
    pub(crate) abi: i32,
}

impl Rulesets {
    /// `roots` decided against `denied` (reads.rs), `also` granted as they are (the shell).
    pub(crate) fn new(
        roots: Vec<PathBuf>,
        denied: crate::reads::Denied,
        also: Vec<PathBuf>,
        devices: Vec<PathBuf>,
        abi: i32,
    ) -> Rulesets {
        let grants = crate::reads::ReadGrants::compute(&roots, &denied);
        let opened = OpenedPaths::open(grants, &also, &devices, 0);
        Rulesets { opened: std::sync::Mutex::new(std::sync::Arc::new(opened)), roots, denied, also, devices, abi }
    }

    /// The opened paths as they are now: computed again when a directory whose entries were
    /// decided one by one changed (a few stats per call otherwise).
    pub(crate) fn current(&self) -> std::sync::Arc<OpenedPaths> {
        let mut opened = self.opened.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if opened.grants.stale() {
            let grants = crate::reads::ReadGrants::compute(&self.roots, &self.denied);
            *opened = std::sync::Arc::new(OpenedPaths::open(grants, &self.also, &self.devices, opened.generation + 1));
        }
        opened.clone()
    }

    /// What of `paths` a call may read: each decided against the denied paths (reads.rs).
    pub(crate) fn decided(&self, paths: &[PathBuf]) -> Vec<PathBuf> {
        crate::reads::ReadGrants::compute(paths, &self.denied).granted
    }

    /// The ruleset of `rules` with `tmp` (the call's temp dir) writable.
    pub(crate) fn build(
        &self,
        opened: &OpenedPaths,
        rules: &RulesetKey,
        tmp: &Path,
    ) -> Result<std::os::fd::OwnedFd, PolicyError> {
        let mut fs = rules.policy.clone();
        fs.read_write.push(tmp.to_path_buf());
        build_ruleset(opened, &fs, self.abi, rules.network)
    }
}
