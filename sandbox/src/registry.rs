//! The tool registry: every tool's facts and the runner that runs it.
//!
//! One registry per kernel. It starts with the built-in tools of `catalog.rs` and takes more
//! through [`ToolRegistry::register`]: tools whose runner is not built in (an MCP server's
//! tool, a plan tool, a subagent tool). Tools found while the kernel runs can come through
//! [`ToolRegistry::register_live`], which every clone of the registry sees (an external MCP
//! server's do not: they belong to the conversations that attached the server, in the kernel). The policy, the kernel's pipeline and the frontends read a
//! tool's facts ([`ToolDef`]) from here, never its name.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, RwLock};

use superpi_proto::tool::{ToolCallResult, ToolDef};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::ToolCall;
use crate::runner::FileBody;

/// The future a [`ToolRunner`] returns.
pub type RunFuture<'a> = Pin<Box<dyn Future<Output = ToolCallResult> + Send + 'a>>;

/// A tool body the embedding program supplies. It runs in the caller's process: a runner
/// that touches the workspace or runs a program must confine itself (through a [`Sandbox`]
/// of its own, or a confined server process); one that only changes the conversation's state
/// needs nothing. It must end soon after `cancel` and never panic.
///
/// [`Sandbox`]: crate::Sandbox
pub trait ToolRunner: Send + Sync {
    fn run<'a>(
        &'a self,
        call: &'a ToolCall,
        cancel: CancellationToken,
        progress: Option<mpsc::Sender<String>>,
    ) -> RunFuture<'a>;
}

/// Which runner runs a tool.
#[derive(Clone)]
pub(crate) enum Runner {
    /// The shell runner: the command line of the tool's `shell` argument, run confined.
    Shell,
    /// The file-tool runner, with the tool's body.
    File(FileBody),
    /// A runner the embedding program registered.
    Registered(Arc<dyn ToolRunner>),
}

/// A read whose result an editor's buffer can stand in for (it may hold unsaved changes):
/// the arguments that say what to read, and how the text becomes the tool's result.
#[derive(Debug, Clone, Copy)]
pub struct EditorRead {
    /// The argument naming the file.
    pub path: &'static str,
    /// The argument giving the first line (1-based).
    pub offset: &'static str,
    /// The argument giving the most lines.
    pub limit: &'static str,
    /// The result from the text: (shown path, text, offset, limit).
    pub render: fn(&str, &str, Option<usize>, Option<usize>) -> ToolCallResult,
}

#[derive(Clone)]
pub(crate) struct Entry {
    pub def: ToolDef,
    pub runner: Runner,
    pub editor_read: Option<EditorRead>,
}

/// A tool that cannot be registered.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RegistryError {
    #[error("a tool named `{0}` is already registered")]
    Duplicate(String),
    #[error("a tool name is 1 to 64 characters of a-z, A-Z, 0-9, `_` and `-`: `{0}`")]
    BadName(String),
}

/// Every tool a kernel offers, with its facts and its runner.
#[derive(Clone)]
pub struct ToolRegistry {
    entries: Vec<Entry>,
    /// Tools registered while the kernel runs, shared by every clone.
    live: Arc<RwLock<Vec<Entry>>>,
}

impl ToolRegistry {
    /// A registry of these tools (the built-in ones: `ToolRegistry::builtin`, in `catalog.rs`).
    pub(crate) fn of(entries: Vec<Entry>) -> Self {
        ToolRegistry { entries, live: Arc::default() }
    }

    /// Adds a tool run by `runner`, offered after those already registered.
    pub fn register(&mut self, def: ToolDef, runner: Arc<dyn ToolRunner>) -> Result<(), RegistryError> {
        check_name(&def.name)?;
        if self.entry(&def.name).is_some() {
            return Err(RegistryError::Duplicate(def.name));
        }
        self.entries.push(Entry { def, runner: Runner::Registered(runner), editor_read: None });
        Ok(())
    }

    /// Adds a tool while the kernel runs, seen by every clone of this registry; it replaces a
    /// live tool of the same name (a server that restarted lists its tools again), never one
    /// registered before the start.
    pub fn register_live(&self, def: ToolDef, runner: Arc<dyn ToolRunner>) -> Result<(), RegistryError> {
        check_name(&def.name)?;
        if self.entries.iter().any(|e| e.def.name == def.name) {
            return Err(RegistryError::Duplicate(def.name));
        }
        let mut live = self.live.write().unwrap_or_else(|p| p.into_inner());
        live.retain(|e| e.def.name != def.name);
        live.push(Entry { def, runner: Runner::Registered(runner), editor_read: None });
        Ok(())
    }

    /// Every tool's facts, in the order they are offered, live ones last.
    pub fn defs(&self) -> Vec<ToolDef> {
        let live = self.live.read().unwrap_or_else(|p| p.into_inner());
        self.entries.iter().chain(live.iter()).map(|e| e.def.clone()).collect()
    }

    /// The facts of the tool `name`, live ones included.
    pub fn def(&self, name: &str) -> Option<ToolDef> {
        self.entry(name).map(|e| e.def)
    }

    /// The facts of the tool `name` registered before the start.
    pub fn get(&self, name: &str) -> Option<&ToolDef> {
        self.entries.iter().find(|e| e.def.name == name).map(|e| &e.def)
    }

    /// How an editor's buffer stands in for a call of `name`, when it can.
    pub fn editor_read(&self, name: &str) -> Option<&EditorRead> {
        self.entries.iter().find(|e| e.def.name == name).and_then(|e| e.editor_read.as_ref())
    }

    pub(crate) fn entry(&self, name: &str) -> Option<Entry> {
        if let Some(entry) = self.entries.iter().find(|e| e.def.name == name) {
            return Some(entry.clone());
        }
        let live = self.live.read().unwrap_or_else(|p| p.into_inner());
        live.iter().find(|e| e.def.name == name).cloned()
    }
}

fn check_name(name: &str) -> Result<(), RegistryError> {
    let valid =
        (1..=64).contains(&name.len()) && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
    if valid { Ok(()) } else { Err(RegistryError::BadName(name.to_string())) }
}

impl Default for ToolRegistry {
    fn default() -> Self {
        Self::builtin()
    }
}

impl fmt::Debug for ToolRegistry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.entries.iter().map(|e| &e.def.name)).finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Nothing;

    impl ToolRunner for Nothing {
        fn run<'a>(&'a self, _: &'a ToolCall, _: CancellationToken, _: Option<mpsc::Sender<String>>) -> RunFuture<'a> {
            Box::pin(async { ToolCallResult::error("nothing") })
        }
    }

    #[test]
    fn registered_tools_follow_the_builtins_and_names_stay_unique() {
        let mut registry = ToolRegistry::builtin();
        let builtins = registry.defs().len();
        let def = ToolDef { name: "plan".into(), ..Default::default() };
        registry.register(def.clone(), Arc::new(Nothing)).unwrap();
        assert_eq!(registry.defs().last(), Some(&def));
        assert_eq!(registry.defs().len(), builtins + 1);
        assert_eq!(registry.register(def, Arc::new(Nothing)), Err(RegistryError::Duplicate("plan".into())));
        let read = registry.defs()[0].name.clone();
        assert!(registry.register(ToolDef { name: read, ..Default::default() }, Arc::new(Nothing)).is_err());
        let bad = ToolDef { name: "a b".into(), ..Default::default() };
        assert_eq!(registry.register(bad, Arc::new(Nothing)), Err(RegistryError::BadName("a b".into())));
        assert!(registry.editor_read("plan").is_none());
    }

    #[test]
    fn live_tools_are_seen_by_every_clone_and_replace_only_live_ones() {
        let registry = ToolRegistry::builtin();
        let clone = registry.clone();
        let def = ToolDef { name: "mcp__fix__echo".into(), description: "one".into(), ..Default::default() };
        registry.register_live(def.clone(), Arc::new(Nothing)).unwrap();
        assert_eq!(clone.def("mcp__fix__echo"), Some(def.clone()));
        assert_eq!(clone.defs().last(), Some(&def));
        let again = ToolDef { description: "two".into(), ..def };
        registry.register_live(again.clone(), Arc::new(Nothing)).unwrap();
        assert_eq!(clone.def("mcp__fix__echo"), Some(again));
        let read = registry.defs()[0].name.clone();
        let shadow = ToolDef { name: read.clone(), ..Default::default() };
        assert_eq!(registry.register_live(shadow, Arc::new(Nothing)), Err(RegistryError::Duplicate(read)));
        assert!(
            registry.register_live(ToolDef { name: "a b".into(), ..Default::default() }, Arc::new(Nothing)).is_err()
        );
    }
}
