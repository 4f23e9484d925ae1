//! superpi-http: the kit of the HTTP frontends (`superpi gateway`, `superpi agui`).
//!
//! Owns what both do the same way, so that neither copies it: the listen arguments and the
//! `run` preamble (listen, announce, graceful shutdown, one error enum: [`run`],
//! [`ListenArgs`], [`Error`]); the state every request reads ([`Frontend`]: tokens, the Origin
//! rule, one kernel connection per principal, the stop signal); the bind rule (no non-loopback
//! listener without a token); bearer tokens read from a comma-separated list and from
//! `gateway.json` in the config dir (superpi-client's token rule), each standing for the
//! principal superpi-client's [`principal_for_token`] names (the RPC server names its tokens with the same function);
//! the Origin rule for a listener without tokens (browsers on other sites are refused) and
//! CORS for the origins it admits; who may connect (superpi-client's peer check: this user
//! only without tokens, never a kernel's confined tool) and the `Host` rule against DNS
//! rebinding (loopback names and the bound address without tokens); SSE framing with a body
//! that coalesces whatever frames are ready into one write; the routes around every
//! frontend's own ([`with_common`]: health, 404, 405, the body limit); the artifact download
//! ([`artifact_download`]); and the refusal type
//! ([`ApiError`]), each frontend naming only its body shape ([`ErrorShape`]).
//!
//! It must not know any kernel type beyond superpi-client's connections, nor any one
//! frontend's wire format or routes: it deals in headers, addresses, bytes and the router a
//! frontend hands it.

mod artifacts;
mod auth;
mod error;
mod frontend;
mod guard;
mod origin;
mod routes;
mod sse;

pub use artifacts::{ARTIFACT_ROUTE, artifact_download, artifact_path};
pub use auth::{
    AuthError, BindError, CONFIG_FILE, TokenFileError, Tokens, authenticate, check_bind, load_tokens,
    principal_for_token,
};
pub use error::{ApiError, ErrorShape};
pub use frontend::{Error, Frontend, ListenArgs, SHUTDOWN_GRACE, TOKEN_VAR, run, serve};
pub use guard::host_allowed;
pub use origin::{Cors, ORIGINS_VAR, is_loopback_origin, origin_allowed};
pub use routes::{Common, with_common};
pub use sse::{SSE_DONE, sse_body, sse_data, sse_headers};
