//! superpi-proto: the kernel protocol as pure data.
//!
//! Owns the typed turn event ([`event::Event`]) with its flat wire form, the messages a
//! frontend and the kernel exchange over the kernel socket ([`message`]), the conversation
//! data they carry ([`content`]), the typed parameters of every kernel method ([`method`]),
//! the length-delimited JSON frame codec ([`frame`]), and where the kernel's files are
//! ([`Locations`]: the directories from the environment, the socket, the lock file, the store).
//!
//! It must not know any runtime: no tokio tasks, no sockets, no SQLite, no processes. Every
//! other crate may depend on it; it depends on nothing of superpi. `kernel/PROTOCOL.md`
//! documents what is here, and a test checks that every method named here is documented there.

pub mod artifact;
pub mod content;
pub mod effort;
pub mod event;
pub mod frame;
pub mod locations;
pub mod memory;
pub mod message;
pub mod method;
pub mod question;
pub mod schedule;
pub mod tool;

pub use content::{ContentBlock, Cost, Entry, EntryKind, Message, Role, Usage};
pub use effort::Effort;
pub use event::{Event, EventBody, PermissionOption, PlanEntry};
pub use locations::{KERNEL_EXIT_LOCK_HELD, Locations};
pub use message::{ClientMessage, ErrorObject, KernelMessage};
pub use tool::{Effect, ToolDef, ToolImage};

/// The kernel protocol version spoken in `hello`. Bumped only for breaking changes;
/// additions go through capabilities.
pub const PROTOCOL_VERSION: u32 = 1;

/// The schema version of the event wire form (`v`).
pub const EVENT_SCHEMA_VERSION: u32 = 1;

#[cfg(test)]
mod spec_tests {
    /// PROTOCOL.md is the contract: every method, message and event type named in this crate
    /// must be documented there.
    #[test]
    fn protocol_md_documents_every_method_message_and_event() {
        let doc = include_str!("../../PROTOCOL.md");
        for method in crate::method::METHOD_NAMES {
            assert!(doc.contains(&format!("### `{method}`")), "PROTOCOL.md lacks method {method}");
        }
        for event in crate::event::EVENT_TYPES {
            assert!(doc.contains(&format!("| `{event}` |")), "PROTOCOL.md lacks event {event}");
        }
        for message in ["hello", "request", "ack", "response", "event", "lagged"] {
            assert!(doc.contains(&format!("| `{message}` |")), "PROTOCOL.md lacks message {message}");
        }
        for code in [
            -32700, -32600, -32601, -32602, -32603, -32001, -32003, -32004, -32005, -32006, -32010, -32011, -32012,
            -32013,
        ] {
            assert!(doc.contains(&format!("| {code} |")), "PROTOCOL.md lacks error code {code}");
        }
    }
}
