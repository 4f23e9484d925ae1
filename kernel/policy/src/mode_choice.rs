//! How the mode of a conversation is chosen: the request, who asks, the harness ceiling and
//! the remote settings.

use crate::harness::Harness;
use crate::mode::Mode;
use crate::settings::Settings;

/// Who asks for a mode. The local CLI is trusted with the harness's range; every other
/// frontend (gateway, RPC, MCP, ACP, AG-UI) is remote and gets the remote default and ceiling.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Caller {
    Local,
    Remote,
}

/// The mode a conversation runs in.
///
/// - Local: the requested mode, or the harness default, lowered to the harness ceiling.
/// - Remote: the requested mode lowered to the remote ceiling; with no request, the tighter of
///   the harness default and the remote default. Then the harness ceiling applies too.
///
/// With the default settings (remote default and ceiling both `accept-edits`) a remote request
/// can only tighten. No request lifts a harness above its ceiling, so the planner stays in
/// `plan` whatever is asked for.
pub fn effective_mode(requested: Option<Mode>, harness: &Harness, caller: Caller, settings: &Settings) -> Mode {
    let wanted = match caller {
        Caller::Local => requested.unwrap_or(harness.default_mode),
        Caller::Remote => match requested {
            Some(mode) => mode.min(settings.remote.max_mode),
            None => harness.default_mode.min(settings.remote.default_mode),
        },
    };
    wanted.min(harness.max_mode)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::harness::Harnesses;

    fn harness(id: &str) -> Harness {
        Harnesses::builtin(&crate::test_tools::builtin_tools()).get(id).unwrap().clone()
    }

    #[test]
    fn local_caller_gets_request_or_default_under_the_ceiling() {
        let s = Settings::default();
        let code = harness("superpi-code");
        assert_eq!(effective_mode(None, &code, Caller::Local, &s), code.default_mode);
        for mode in Mode::ALL {
            assert_eq!(effective_mode(Some(mode), &code, Caller::Local, &s), mode);
        }
        let planner = harness("superpi-planner");
        for mode in Mode::ALL {
            assert_eq!(effective_mode(Some(mode), &planner, Caller::Local, &s), Mode::Plan);
        }
        assert_eq!(effective_mode(None, &planner, Caller::Local, &s), Mode::Plan);
    }

    #[test]
    fn remote_caller_can_only_tighten_by_default() {
        let s = Settings::default();
        let code = harness("superpi-code");
        assert_eq!(effective_mode(None, &code, Caller::Remote, &s), Mode::AcceptEdits);
        assert_eq!(effective_mode(Some(Mode::Auto), &code, Caller::Remote, &s), Mode::AcceptEdits);
        assert_eq!(effective_mode(Some(Mode::AcceptEdits), &code, Caller::Remote, &s), Mode::AcceptEdits);
        assert_eq!(effective_mode(Some(Mode::Plan), &code, Caller::Remote, &s), Mode::Plan);
        let planner = harness("superpi-planner");
        assert_eq!(effective_mode(None, &planner, Caller::Remote, &s), Mode::Plan);
        assert_eq!(effective_mode(Some(Mode::Auto), &planner, Caller::Remote, &s), Mode::Plan);
    }

    #[test]
    fn configured_remote_ceiling_and_default_apply() {
        let mut s = Settings::default();
        s.remote.max_mode = Mode::Auto;
        s.remote.default_mode = Mode::Plan;
        let code = harness("superpi-code");
        assert_eq!(effective_mode(None, &code, Caller::Remote, &s), Mode::Plan);
        assert_eq!(effective_mode(Some(Mode::Auto), &code, Caller::Remote, &s), Mode::Auto);
        let planner = harness("superpi-planner");
        assert_eq!(effective_mode(Some(Mode::Auto), &planner, Caller::Remote, &s), Mode::Plan);
    }

    #[test]
    fn effective_mode_never_exceeds_any_ceiling() {
        let mut s = Settings::default();
        for remote_max in Mode::ALL {
            for remote_default in Mode::ALL.into_iter().filter(|m| *m <= remote_max) {
                s.remote.max_mode = remote_max;
                s.remote.default_mode = remote_default;
                for h in Harnesses::builtin(&crate::test_tools::builtin_tools()).iter() {
                    for req in [None, Some(Mode::Plan), Some(Mode::AcceptEdits), Some(Mode::Auto)] {
                        let local = effective_mode(req, h, Caller::Local, &s);
                        let remote = effective_mode(req, h, Caller::Remote, &s);
                        assert!(local <= h.max_mode && remote <= h.max_mode);
                        assert!(remote <= remote_max);
                        assert!(remote <= local, "remote is never looser than local");
                        if let Some(r) = req {
                            assert!(local <= r && remote <= r, "a request never loosens");
                        }
                    }
                }
            }
        }
    }
}
