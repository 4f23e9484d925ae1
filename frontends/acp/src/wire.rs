//! superpi's own ACP methods (`_superpi/...`), beside the SDK's schema types.

use agent_client_protocol::v1::schema::SessionId;
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
