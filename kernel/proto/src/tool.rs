//! Tools as the kernel offers them: a tool's facts (name, schema, effects, path arguments,
//! how a user interface shows it) and the result of a call.
//!
//! These facts are the only thing the policy, the kernel's pipeline and the frontends know of
//! a tool: none of them matches on a tool's name. The sandbox's registry fills them in.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// What a tool may do. Permission policy decides from effects, and MCP annotations derive
/// from them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Effect {
    Read,
    FsWrite,
    Exec,
    NetRead,
    NetWrite,
    StateWrite,
}

/// A tool as offered to a model or an MCP client, with the facts the policy and user
/// interfaces read. Every field after `effects` is optional on the wire (older kernels do not
/// send them), and says nothing when absent.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ToolDef {
    pub name: String,
    pub description: String,
    pub input_schema: Value,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_schema: Option<Value>,
    pub effects: Vec<Effect>,
    /// Acts in the conversation's workspace: refused in a conversation without one, and a
    /// harness without a workspace cannot offer it.
    #[serde(default, skip_serializing_if = "is_false")]
    pub workspace: bool,
    /// The arguments that name files or directories, and what the tool does with them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub paths: Vec<PathArg>,
    /// The argument holding a shell command line, which the policy checks against the allow
    /// and deny lists of commands.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shell: Option<String>,
    /// The boolean argument by which a call asks for network (a shell tool's commands run
    /// without it otherwise). A call with it `true` is decided like a `net_write` tool.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub network_arg: Option<String>,
    /// A file edit: what the `accept-edits` mode lets through without asking.
    #[serde(default, skip_serializing_if = "is_false")]
    pub edits: bool,
    /// How a user interface shows a call of this tool.
    #[serde(default, skip_serializing_if = "ToolUi::is_empty")]
    pub ui: ToolUi,
    /// The external MCP server that serves this tool (from the user's settings or an
    /// editor), when it is one's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mcp_server: Option<String>,
    /// Acts on the conversation whose turn calls it (its plan, a subagent): only a model in a
    /// turn can call it, so `tool.list` and `tool.call` (the MCP server's tools) leave it out.
    #[serde(default, skip_serializing_if = "is_false")]
    pub turn_only: bool,
    /// The capability block the tool belongs to (web access, durable memory, scheduling),
    /// which a harness offers as a whole; `None` for a workspace tool (files, shell) or the
    /// kernel's own.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub capability: Option<Capability>,
}

/// A capability block: tools that any harness can take together, whatever its workspace
/// (the built-in assistant takes the web; a harness of `harnesses.toml` names the blocks it
/// wants). An unknown block reads as `other`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Capability {
    /// Reaching the web: fetching a page, searching.
    Web,
    /// Notes that outlive a conversation.
    Memory,
    /// Schedules and triggers: turns that start with nobody present.
    Schedule,
    #[serde(other)]
    Other,
}

impl Capability {
    /// The blocks a harness can take (not `Other`, which only reads a newer kernel's).
    pub const ALL: [Capability; 3] = [Capability::Web, Capability::Memory, Capability::Schedule];

    pub fn as_str(self) -> &'static str {
        match self {
            Capability::Web => "web",
            Capability::Memory => "memory",
            Capability::Schedule => "schedule",
            Capability::Other => "other",
        }
    }
}

fn is_false(b: &bool) -> bool {
    !*b
}

/// One argument that names a path.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PathArg {
    /// The argument's key (its value is a string, or an array of strings).
    pub arg: String,
    pub access: PathAccess,
}

/// What a tool does with a path argument. Every path must stay inside the workspace;
/// protected paths (credentials, `.env`) refuse `read` and `write`; writes of one path are
/// serialized.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PathAccess {
    /// Reads the file's contents.
    Read,
    /// Writes (creates, replaces, changes) the file.
    Write,
    /// Lists names under the path, reading no contents.
    List,
    /// Works in that directory (a command's working directory).
    Cwd,
}

impl ToolDef {
    /// Whether this call asks for network through the tool's `network_arg`.
    pub fn asks_network(&self, arguments: &Value) -> bool {
        self.network_arg.as_deref().and_then(|arg| arguments.get(arg)).and_then(Value::as_bool) == Some(true)
    }
}

impl PathAccess {
    /// Whether protected paths apply: the tool sees or changes the file's contents.
    pub fn touches_contents(self) -> bool {
        matches!(self, PathAccess::Read | PathAccess::Write)
    }
}

/// How a user interface shows a call.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolUi {
    /// The kind of work, which picks an icon and a treatment (ACP's tool kinds).
    #[serde(default, skip_serializing_if = "ToolKind::is_other")]
    pub kind: ToolKind,
    /// A one-line title: text with `{arg}` placeholders (the argument's first line, cut at
    /// [`TITLE_ARG_CHARS`]), in alternatives separated by `||`: the first whose arguments are
    /// all strings is the title. Without one (or a template) the title is the tool's name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// The argument that gives the line a call looks at (shown with its location).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub line: Option<String>,
    /// A successful call changed a file as these arguments say: shown as a diff.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub diff: Option<DiffArgs>,
}

impl ToolUi {
    fn is_empty(&self) -> bool {
        *self == ToolUi::default()
    }
}

/// The arguments of a file change: the path, the new text and (for a replacement) the old.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DiffArgs {
    pub path: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub old: Option<String>,
    pub new: String,
}

/// The kind of work a tool does, as ACP names it. Unknown kinds read as `other`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ToolKind {
    Read,
    Edit,
    Delete,
    Move,
    Search,
    Execute,
    Think,
    Fetch,
    #[default]
    #[serde(other)]
    Other,
}

impl ToolKind {
    fn is_other(&self) -> bool {
        *self == ToolKind::Other
    }
}

/// Most characters of one argument in a title.
pub const TITLE_ARG_CHARS: usize = 120;

impl ToolDef {
    /// Only reads: MCP readOnlyHint.
    pub fn is_read_only(&self) -> bool {
        self.effects.iter().all(|e| matches!(e, Effect::Read | Effect::NetRead))
    }

    /// May change or destroy what exists: MCP destructiveHint.
    pub fn is_destructive(&self) -> bool {
        self.effects.iter().any(|e| matches!(e, Effect::FsWrite | Effect::Exec | Effect::StateWrite | Effect::NetWrite))
    }

    /// Reaches beyond the workspace: MCP openWorldHint.
    pub fn is_open_world(&self) -> bool {
        self.effects.iter().any(|e| matches!(e, Effect::NetRead | Effect::NetWrite | Effect::Exec))
    }

    /// The path arguments present in `arguments`, in declaration order: `Some(text)` per
    /// string (an array gives one per item), `None` per value that is not a string.
    pub fn path_values<'a>(&'a self, arguments: &'a Value) -> Vec<(PathAccess, Option<&'a str>)> {
        let mut out = Vec::new();
        for p in &self.paths {
            match arguments.get(&p.arg) {
                None | Some(Value::Null) => {}
                Some(Value::String(s)) => out.push((p.access, Some(s.as_str()))),
                Some(Value::Array(items)) => out.extend(items.iter().map(|v| (p.access, v.as_str()))),
                Some(_) => out.push((p.access, None)),
            }
        }
        out
    }

    /// The paths this call writes (the strings of its `write` path arguments).
    pub fn written_paths<'a>(&'a self, arguments: &'a Value) -> Vec<&'a str> {
        self.path_values(arguments)
            .into_iter()
            .filter(|(access, _)| *access == PathAccess::Write)
            .filter_map(|(_, path)| path)
            .collect()
    }

    /// The call's one-line title, from [`ToolUi::title`].
    pub fn title(&self, arguments: &Value) -> String {
        match &self.ui.title {
            Some(template) => {
                template.split("||").find_map(|t| fill_title(t, arguments)).unwrap_or_else(|| self.name.clone())
            }
            None => self.name.clone(),
        }
    }
}

/// Fills the `{arg}` placeholders of one alternative; `None` when an argument is missing.
fn fill_title(template: &str, arguments: &Value) -> Option<String> {
    let mut out = String::new();
    let mut rest = template;
    while let Some(open) = rest.find('{') {
        out.push_str(&rest[..open]);
        let after = &rest[open + 1..];
        let close = after.find('}')?;
        let value = arguments.get(&after[..close]).and_then(Value::as_str)?;
        out.push_str(&first_line(value, TITLE_ARG_CHARS));
        rest = &after[close + 1..];
    }
    out.push_str(rest);
    Some(out)
}

/// The first line of `s`, at most `max_chars` characters, with `…` when anything was cut.
fn first_line(s: &str, max_chars: usize) -> String {
    let line = s.lines().next().unwrap_or("");
    let mut out: String = line.chars().take(max_chars).collect();
    if out.len() < s.len() {
        out.push('…');
    }
    out
}

/// The result of one tool call, in its three channels: what the model reads, structured
/// output for programs, details for a user interface. The sandbox, the kernel's pipeline and
/// `tool.call` all hand back this one type.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolCallResult {
    /// What the model reads.
    pub output: String,
    pub is_error: bool,
    /// Structured output for programs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub structured: Option<Value>,
    /// Details for a user interface (a diff, the spill path, exit code).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub details: Option<Value>,
    /// Images the model sees beside `output` (the `read` tool's image files, an MCP server's
    /// image content).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub images: Vec<ToolImage>,
}

/// An image a tool returned, by its bytes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolImage {
    /// Read from the bytes ([`crate::content::image_media_type`]).
    pub media_type: String,
    /// Standard base64.
    pub data: String,
    /// `output` already describes it (an MCP server's image): a model that takes no images
    /// reads that description, and the result is not an error for it.
    #[serde(default, skip_serializing_if = "is_false")]
    pub described: bool,
}

impl ToolCallResult {
    /// An error result the model reads.
    pub fn error(message: impl Into<String>) -> Self {
        ToolCallResult { output: message.into(), is_error: true, structured: None, details: None, images: Vec::new() }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn shown(template: &str) -> ToolDef {
        ToolDef {
            name: "t".into(),
            ui: ToolUi { title: Some(template.into()), ..Default::default() },
            ..Default::default()
        }
    }

    #[test]
    fn titles_fill_placeholders_and_fall_back_to_the_name() {
        assert_eq!(shown("Run `{command}`").title(&json!({"command": "ls -la\necho hi"})), "Run `ls -la…`");
        assert_eq!(shown("List {path}||List .").title(&json!({})), "List .");
        assert_eq!(shown("List {path}||List .").title(&json!({"path": "src"})), "List src");
        assert_eq!(shown("Read {path}").title(&json!({})), "t");
        assert_eq!(shown("Read {path}").title(&json!({"path": 3})), "t");
        assert_eq!(shown("Odd {path").title(&json!({"path": "a"})), "t");
        let long = "x".repeat(200);
        assert_eq!(shown("{a}").title(&json!({ "a": long })).chars().count(), TITLE_ARG_CHARS + 1);
        assert_eq!(ToolDef::default().title(&json!({})), "");
    }

    #[test]
    fn path_values_follow_the_declared_arguments() {
        let def = ToolDef {
            paths: vec![
                PathArg { arg: "path".into(), access: PathAccess::Write },
                PathArg { arg: "from".into(), access: PathAccess::Read },
            ],
            ..Default::default()
        };
        let args = json!({"path": "a", "from": ["b", 1], "other": "c"});
        assert_eq!(
            def.path_values(&args),
            [(PathAccess::Write, Some("a")), (PathAccess::Read, Some("b")), (PathAccess::Read, None)]
        );
        assert_eq!(def.written_paths(&args), ["a"]);
    }

    #[test]
    fn the_facts_are_optional_on_the_wire() {
        let old = json!({"name": "x", "description": "", "input_schema": {}, "effects": ["read"]});
        let def: ToolDef = serde_json::from_value(old.clone()).unwrap();
        assert_eq!(def.ui.kind, ToolKind::Other);
        assert_eq!(serde_json::to_value(&def).unwrap(), old, "absent facts are not sent");
        let kind: ToolKind = serde_json::from_value(json!("switch_mode")).unwrap();
        assert_eq!(kind, ToolKind::Other, "an unknown kind reads as other");
    }
}
