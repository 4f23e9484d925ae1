//! superpi-proto: the kernel protocol as pure data.
//!
//! Owns the typed turn event ([`event::Event`]) with its flat wire form, the messages a
//! frontend and the kernel exchange over the kernel socket ([`message`]), the conversation
//! data they carry ([`content`]), the typed parameters of every kernel method ([`method`]),
//! and the length-delimited JSON frame codec ([`frame`]).
//!
//! It must not know any runtime: no tokio tasks, no sockets, no SQLite, no processes. Every
//! other crate may depend on it; it depends on nothing of superpi. `kernel/PROTOCOL.md`
//! documents what is here, and a test checks that every method named here is documented there.

pub mod content;
pub mod event;
pub mod frame;
pub mod message;
pub mod method;
pub mod tool;

pub use content::{ContentBlock, Entry, EntryKind, Message, Role, Usage};
pub use event::{Event, EventBody, PermissionOption, PlanEntry};
pub use message::{ClientMessage, ErrorObject, KernelMessage};
pub use tool::{Effect, ToolDef};

/// The kernel protocol version spoken in `hello`. Bumped only for breaking changes;
/// additions go through capabilities.
pub const PROTOCOL_VERSION: u32 = 1;

/// The schema version of the event wire form (`v`).
pub const EVENT_SCHEMA_VERSION: u32 = 1;
