//! superpi-web: the web access block's tools, `web_fetch` and `web_search`, as registered
//! runners (they run in the kernel's process: see ARCHITECTURE.md "Web access").
//!
//! Owns: the request-forgery policy (which URLs and addresses a fetch may reach, checked on
//! every redirect and, through the client's resolver, on the address it connects to), the
//! fetch with its limits, HTML reduced to text (html2text), and the search backends (SearXNG,
//! Brave).
//!
//! Must not know: conversations, the store, modes or how a call was decided. The kernel's
//! pipeline decides a call (the network policy, the mode) before it runs and passes the
//! grant (`ToolCall::network`) and the network allow list (`ToolCall::allowed_hosts`), which
//! the fetch applies to every hop. It starts no process and touches no file.

pub mod address;
pub mod extract;
pub mod fetch;
pub mod forgery;
pub mod search;
mod tools;

pub use forgery::Forbidden;
pub use tools::{WebSettingsSource, fetch_def, search_def, tools};
