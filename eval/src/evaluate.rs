//! `mocc eval`: run a policy deterministically (action = mean) on every network x objective x
//! seed of a suite file, then on its scenario files, and report per-run network metrics and
//! rewards ([`crate::results`]).

use crate::actor::LoadedPolicy;
use crate::network_eval::evaluate_networks;
use crate::results::{EvalError, EvalRow};
use crate::scenario_eval::evaluate_scenarios;
use crate::suite::Suite;

/// Runs every network x objective x seed of the suite, then its `scenarios:` entries.
pub fn evaluate(policy: &LoadedPolicy, suite: &Suite) -> Result<Vec<EvalRow>, EvalError> {
    let mut rows = evaluate_networks(policy, suite)?;
    rows.extend(evaluate_scenarios(policy, suite)?);
    Ok(rows)
}
