//! superpi's own ACP methods (`_superpi/...`), beside the SDK's schema types.

use agent_client_protocol::v1::schema::{ContentBlock, SessionId};
use serde::{Deserialize, Serialize};

/// `_superpi/session/fork`: a new session holding the conversation so far.
#[derive(Debug, Clone, Serialize, Deserialize, agent_client_protocol::JsonRpcRequest)]
#[request(method = "_superpi/session/fork", response = ForkSessionResponse)]
#[serde(rename_all = "camelCase")]
pub struct ForkSessionRequest {
    pub session_id: SessionId,
}

#[derive(Debug, Clone, Serialize, Deserialize, agent_client_protocol::JsonRpcResponse)]
#[serde(rename_all = "camelCase")]
pub struct ForkSessionResponse {
    pub session_id: SessionId,
}

/// The method of [`SteeringRequest`], advertised in `initialize`'s `agentCapabilities._meta`.
pub const STEERING_METHOD: &str = "_session/steering";

/// `_session/steering`: a prompt for the running turn of the session (ACP v1 has no way to
/// say one), added before the turn's next model request. The running `session/prompt` goes
/// on and answers when the turn ends.
#[derive(Debug, Clone, Serialize, Deserialize, agent_client_protocol::JsonRpcRequest)]
#[request(method = "_session/steering", response = SteeringResponse)]
#[serde(rename_all = "camelCase")]
pub struct SteeringRequest {
    pub session_id: SessionId,
    pub prompt: Vec<ContentBlock>,
}

#[derive(Debug, Clone, Serialize, Deserialize, agent_client_protocol::JsonRpcResponse)]
#[serde(rename_all = "camelCase")]
pub struct SteeringResponse {
    /// True when the prompt joined the running turn; false when that turn was already ending:
    /// the prompt then runs as the next turn, whose updates follow (no `session/prompt`
    /// answers it).
    pub steered: bool,
}
