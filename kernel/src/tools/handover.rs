//! The turn's hand-over tools as registered runners: `handoff` (the conversation to another
//! harness, `turn/handoff.rs`) and `escalate` (the rest of the turn to the cascade's next
//! model, `turn/loadout.rs`). Being registry tools, their calls pass the `before_tool` hooks
//! and the policy like any; a harness's own fields offer them (`catalog.rs`), and the turn
//! loop moves the turn on once one ran. Both run in the kernel's process, touch no file and
//! no network, and are `turn_only`.

use superpi_proto::tool::ToolCallResult;
use superpi_sandbox::{RunFuture, ToolCall, ToolRunner};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::catalog::{ESCALATE_TOOL, HANDOFF_TOOL};
use crate::kernel::KernelSlot;
use crate::sync::lock;

/// Which of the two a runner is.
#[derive(Clone, Copy)]
pub(crate) enum Handover {
    Handoff,
    Escalate,
}

/// The runner of `handoff` or `escalate`.
pub(crate) struct HandoverTool {
    pub kernel: KernelSlot,
    pub tool: Handover,
}

impl ToolRunner for HandoverTool {
    fn run<'a>(&'a self, call: &'a ToolCall, _: CancellationToken, _: Option<mpsc::Sender<String>>) -> RunFuture<'a> {
        Box::pin(async move {
            let name = match self.tool {
                Handover::Handoff => HANDOFF_TOOL,
                Handover::Escalate => ESCALATE_TOOL,
            };
            let conv = self.kernel.get().and_then(|kernel| Some((kernel.live.get(call.conversation_id)?, kernel)));
            let Some((conv, kernel)) = conv else {
                return ToolCallResult::error(format!("`{name}` is called by a model during a turn"));
            };
            let (Some(turn_id), Some(model)) = (*lock(&conv.running), lock(&conv.turn_model).clone()) else {
                return ToolCallResult::error(format!("`{name}` is called by a model during a turn"));
            };
            let harness = match kernel.catalog.harness(Some(&conv.settings().harness)) {
                Ok(harness) => harness,
                Err(err) => return ToolCallResult::error(err.message),
            };
            match self.tool {
                Handover::Handoff => {
                    match crate::turn::handoff::hand_off(&kernel, &conv, turn_id, harness, &call.arguments) {
                        Ok(said) => crate::turn::answered(said),
                        Err(why) => ToolCallResult::error(why),
                    }
                }
                Handover::Escalate => match harness.cost.escalation(&model) {
                    Some(_) => crate::turn::answered("escalated: a stronger model takes the next step"),
                    None => ToolCallResult::error(format!(
                        "no stronger model to escalate to: {model} is the last of the harness's models"
                    )),
                },
            }
        })
    }
}
