//! superpi-http: what the HTTP frontends (`superpi gateway`, `superpi agui`) share.
//!
//! Owns the bind rule (no non-loopback listener without a token), bearer tokens read from a
//! comma-separated list and from `gateway.json` in the config dir, the principal each token
//! stands for, the Origin rule for a listener without tokens (browsers on other sites are
//! refused), and SSE framing with a body that coalesces whatever frames are ready into one
//! write.
//!
//! It must not know the kernel, any kernel type, nor any one frontend's wire format: it deals
//! in headers, addresses and bytes.

mod auth;
mod config;
mod origin;
mod sse;

pub use auth::{AuthError, BindError, Tokens, check_bind};
pub use config::{CONFIG_FILE, ConfigError};
pub use origin::origin_allowed;
pub use sse::{SSE_DONE, sse_body, sse_data, sse_headers};
