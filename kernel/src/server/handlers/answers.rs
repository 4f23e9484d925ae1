//! Answers to what a conversation asked: permission questions and `ui_request`s.

use std::sync::Arc;

use super::Reply;

use serde_json::{Value, json};
use superpi_proto::ErrorObject;
use superpi_proto::message::codes;

use crate::conversation::questions::{Answerer, Refused};
use crate::kernel::Kernel;
use crate::server::peer::Peer;

/// `permission.respond`: to a question this kernel asked, or (not open here) one another kernel
/// asked, through the store.
pub(super) fn respond(kernel: &Arc<Kernel>, peer: &Peer, request_id: &str, option_id: String) -> Reply {
    let by = Answerer { principal: &peer.principal, remote: peer.remote };
    // A question asked here may have an answer given through another kernel in the store: the
    // store says which came first.
    let first = || crate::turn::cluster_holder::first_answer(kernel, request_id, &json!(option_id));
    let answered = match kernel.questions.answer_permission_first(by, request_id, option_id.clone(), first) {
        Err(Refused::NotOpen) => crate::turn::cluster_holder::answer_permission(kernel, by, request_id, &option_id),
        here => here,
    };
    match answered {
        Ok(valid) => Ok(json!({"accepted": valid})),
        Err(Refused::NotOpen) => Err(ErrorObject::new(codes::NOT_FOUND, format!("no open question {request_id}"))),
        Err(Refused::AboveRemoteCeiling) => Err(ErrorObject::new(
            codes::FORBIDDEN,
            format!("{request_id}: the remote mode ceiling refuses this call, so a remote frontend cannot allow it"),
        )),
    }
}

pub(super) fn ui_respond(kernel: &Arc<Kernel>, peer: &Peer, request_id: &str, outcome: Value) -> Reply {
    let first = || crate::turn::cluster_holder::first_answer(kernel, request_id, &outcome);
    let answered = match kernel.questions.answer_ui_first(&peer.principal, request_id, outcome.clone(), first) {
        Err(_) => crate::turn::cluster_holder::answer_ui(kernel, &peer.principal, request_id, &outcome),
        here => here,
    };
    match answered {
        Ok(waited) => Ok(json!({"accepted": waited})),
        Err(_) => Err(ErrorObject::new(codes::NOT_FOUND, format!("no open request {request_id}"))),
    }
}
