//! Tools for tests: the sandbox's built-in tools with their real facts.

use superpi_proto::ToolDef;
use superpi_proto::tool::Effect;

/// The built-in tools, as the kernel has them.
pub(crate) fn builtin_tools() -> Vec<ToolDef> {
    superpi_sandbox::ToolRegistry::builtin().defs()
}

/// The facts of the built-in `name` (or of a plain tool that names no path and runs no
/// shell), with `effects` in place of its own.
pub(crate) fn tool(name: &str, effects: &[Effect]) -> ToolDef {
    let mut def = builtin_tools()
        .into_iter()
        .find(|t| t.name == name)
        .unwrap_or_else(|| ToolDef { name: name.into(), ..Default::default() });
    def.effects = effects.to_vec();
    def
}
