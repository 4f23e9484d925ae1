//! The bodies of superpi's fuzz targets: one function per target, bytes in, a panic when a
//! property breaks (and never otherwise).
//!
//! The same source is compiled twice: by the cargo-fuzz binaries in `fuzz_targets/` (each
//! calls one function here) and by the stable replay test `tests/tests/fuzz_corpora.rs`,
//! which includes this file and feeds it every file of `corpus/NAME/`. A target therefore
//! checks properties of the code under test, not just that it returns: a codec round-trips,
//! a line reader's output does not depend on how its input was split, a provider parser's
//! output keeps the stream algebra, a workspace settings file only tightens, a translated tool schema keeps the vendor's rules.
//!
//! Each function reaches the code the way its frontend or loader does, through the crate's
//! public API; nothing here reimplements what it tests.

pub mod acp;
pub mod lines;
pub mod mcp;
pub mod policy;
pub mod proto;
pub mod providers;
pub mod rpc;
pub mod schema;

/// A target's body: fuzz input in, a panic when a property breaks.
pub type Target = fn(&[u8]);

/// Every target: its name (the binary and the corpus folder) and its body.
pub const TARGETS: &[(&str, Target)] = &[
    ("frame", proto::frame),
    ("event", proto::event),
    ("rpc_envelope", rpc::envelope),
    ("lines", lines::read),
    ("acp_request", acp::request),
    ("mcp_request", mcp::request),
    ("sse_openai", providers::openai),
    ("sse_anthropic", providers::anthropic),
    ("sse_gemini", providers::gemini),
    ("shell", policy::shell),
    ("settings", policy::settings),
    ("harness", policy::harness),
    ("schema_openai", schema::openai),
    ("schema_anthropic", schema::anthropic),
    ("schema_gemini", schema::gemini),
];
