//! `authMethods`: the provider keys superpi reads from its environment, so an editor can show
//! which are missing. superpi takes no key over ACP (keys live in the environment the editor
//! starts it with); `authenticate` only says whether that variable is set.

use agent_client_protocol::Error;
use agent_client_protocol::v1::schema::{AuthMethod, AuthMethodAgent, AuthMethodId, Meta};
use serde_json::json;

/// The API keys of the built-in providers, with the vendor each is for.
pub const KEYS: [(&str, &str); 3] =
    [("OPENAI_API_KEY", "OpenAI"), ("ANTHROPIC_API_KEY", "Anthropic"), ("GEMINI_API_KEY", "Google Gemini")];

const PREFIX: &str = "env:";

/// One method per key: id `env:NAME`, and in `_meta.superpi` the variable and whether it is set.
pub fn methods(is_set: &dyn Fn(&str) -> bool) -> Vec<AuthMethod> {
    KEYS.iter()
        .map(|(var, vendor)| {
            let meta: Meta = [("superpi".to_string(), json!({"env": var, "set": is_set(var)}))].into_iter().collect();
            AuthMethod::Agent(
                AuthMethodAgent::new(format!("{PREFIX}{var}"), format!("{vendor} API key"))
                    .description(format!(
                        "Set {var} in the environment the editor starts superpi with (in Zed: \
                         agent_servers.superpi.env); superpi reads keys from its environment only."
                    ))
                    .meta(meta),
            )
        })
        .collect()
}

/// `authenticate`: succeeds when the method's variable is set; otherwise `auth_required`
/// naming the variable and where to set it.
pub fn authenticate(method: &AuthMethodId, is_set: &dyn Fn(&str) -> bool) -> Result<(), Error> {
    let var = method.0.strip_prefix(PREFIX).filter(|v| KEYS.iter().any(|(k, _)| k == v));
    let Some(var) = var else {
        return Err(Error::invalid_params().data(json!(format!("unknown auth method `{}`", method.0))));
    };
    if is_set(var) {
        return Ok(());
    }
    let mut err = Error::auth_required().data(json!({"env": var}));
    err.message = format!(
        "{var} is not set in superpi's environment: add it to the agent's env in the editor's settings, then restart the agent"
    );
    Err(err)
}

/// Whether a variable is set (and not empty) in this process's environment.
pub fn env_is_set(var: &str) -> bool {
    std::env::var_os(var).is_some_and(|v| !v.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_key_is_a_method_saying_whether_it_is_set() {
        let set = |v: &str| v == "ANTHROPIC_API_KEY";
        let methods = methods(&set);
        let ids: Vec<&str> = methods.iter().map(|m| &*m.id().0).collect();
        assert_eq!(ids, ["env:OPENAI_API_KEY", "env:ANTHROPIC_API_KEY", "env:GEMINI_API_KEY"]);
        let wire = serde_json::to_value(&methods).unwrap_or_default();
        assert_eq!(wire[1]["_meta"]["superpi"], json!({"env": "ANTHROPIC_API_KEY", "set": true}));
        assert_eq!(wire[0]["_meta"]["superpi"]["set"], false);
        assert!(wire[0].get("type").is_none(), "an agent method: {wire}");
        assert!(methods[0].description().is_some_and(|d| d.contains("OPENAI_API_KEY")));
    }

    #[test]
    fn authenticate_says_which_variable_is_missing() {
        let set = |v: &str| v == "GEMINI_API_KEY";
        assert!(authenticate(&AuthMethodId::new("env:GEMINI_API_KEY"), &set).is_ok());
        let err = authenticate(&AuthMethodId::new("env:OPENAI_API_KEY"), &set).err();
        let (code, message) = err.map(|e| (e.code, e.message)).unzip();
        assert_eq!(code, Some(Error::auth_required().code));
        assert!(message.is_some_and(|m| m.contains("OPENAI_API_KEY")));
        assert!(authenticate(&AuthMethodId::new("env:PATH"), &set).is_err());
        assert!(authenticate(&AuthMethodId::new("oauth"), &set).is_err());
    }
}
