use super::*;
use superpi_providers::config;

fn map(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
}

const BY_HAND: KernelState = KernelState { pid: 42, autostarted: false, running_turns: 0 };
const IDLE_AUTOSTARTED: KernelState = KernelState { pid: 42, autostarted: true, running_turns: 0 };

#[test]
fn only_what_the_frontend_has_and_the_kernel_lacks_or_holds_otherwise_differs() {
    let ours = map(&[("OPENAI_API_KEY", "aa"), ("GEMINI_API_KEY", "gg"), ("SUPERPI_MODEL", "mm")]);
    let theirs = map(&[("OPENAI_API_KEY", "bb"), ("ANTHROPIC_API_KEY", "cc"), ("SUPERPI_MODEL", "mm"), ("PATH", "x")]);
    assert_eq!(
        differences(PROVIDER_VARIABLES, &ours, &theirs),
        [("OPENAI_API_KEY", Difference::Changed), ("ANTHROPIC_API_KEY", Difference::Missing)]
    );
    // The kernel's GEMINI_API_KEY, which the frontend lacks, is no difference.
    assert!(differences(PROVIDER_VARIABLES, &ours, &map(&[])).is_empty());
}

#[test]
fn a_custom_models_key_variable_is_compared_only_when_the_kernel_reads_it() {
    let theirs = map(&[("OPENROUTER_API_KEY", "or"), ("STRIPE_API_KEY", "st")]);
    let read = ["OPENAI_API_KEY", "OPENROUTER_API_KEY"];
    assert_eq!(differences(&read, &map(&[]), &theirs), [("OPENROUTER_API_KEY", Difference::Missing)]);
}

#[test]
fn a_kernel_started_by_hand_says_which_variable_it_lacks_and_what_to_do() {
    let verdict = verdict(&[("ANTHROPIC_API_KEY", Difference::Missing)], "cli", true, BY_HAND);
    let Verdict::Refuse(err) = verdict else { panic!("{verdict:?}") };
    assert_eq!(err.code, codes::PROVIDER_ENV);
    assert_eq!(
        err.message,
        "the running kernel (pid 42) was started without ANTHROPIC_API_KEY; your shell has it; it was \
         started by hand, so superpi does not replace it: `superpi kernel stop`, then run again"
    );
}

#[test]
fn an_idle_autostarted_kernel_stops_for_a_frontend_that_starts_one() {
    let differences = [("OPENAI_API_KEY", Difference::Missing), ("OPENAI_BASE_URL", Difference::Changed)];
    let Verdict::Replace(err) = verdict(&differences, "acp", true, IDLE_AUTOSTARTED) else { panic!() };
    assert_eq!(err.code, codes::KERNEL_REPLACED);
    assert!(err.message.contains("was started without OPENAI_API_KEY; `superpi acp` has it"), "{}", err.message);
    assert!(err.message.contains("has another OPENAI_BASE_URL than `superpi acp`"), "{}", err.message);
    // A frontend that does not start kernels (or already replaced one) is told instead.
    let Verdict::Refuse(err) = verdict(&differences, "cli", false, IDLE_AUTOSTARTED) else { panic!() };
    assert!(err.message.ends_with("`superpi kernel stop`, then run again"), "{}", err.message);
}

#[test]
fn an_autostarted_kernel_with_running_turns_is_not_replaced() {
    let busy = KernelState { running_turns: 2, ..IDLE_AUTOSTARTED };
    let Verdict::Refuse(err) = verdict(&[("GEMINI_API_KEY", Difference::Missing)], "cli", true, busy) else { panic!() };
    assert!(err.message.contains("it is running 2 turns, so superpi does not replace it now"), "{}", err.message);
    assert!(err.message.contains("`superpi kernel stop`"), "{}", err.message);
}

#[test]
fn names_are_listed_in_order_with_and() {
    let missing = [
        ("OPENAI_API_KEY", Difference::Missing),
        ("ANTHROPIC_API_KEY", Difference::Missing),
        ("GEMINI_API_KEY", Difference::Missing),
    ];
    assert_eq!(
        describe(&missing, "cli"),
        "was started without OPENAI_API_KEY, ANTHROPIC_API_KEY and GEMINI_API_KEY; your shell has them"
    );
}

#[test]
fn every_variable_the_providers_read_is_compared() {
    let vendors = superpi_providers::vendor::WIRE_APIS.iter().flat_map(|api| [api.key_var, api.base_url_var]);
    for name in vendors.chain([config::SUPERPI_OPENAI_AUTH_COMMAND, config::SUPERPI_MODEL]) {
        assert!(PROVIDER_VARIABLES.contains(&name), "{name} is not in PROVIDER_VARIABLES");
    }
}
