//! mocc-python: the extension module `mocc._mocc`, the native half of the `mocc` Python package.
//!
//! It exposes the simulator's batch of environments ([`vec_env::VecEnv`], over
//! `mocc_gym::VecEnv`) and the runtime of exported policies ([`runtime::Policy`],
//! [`runtime::Controller`], [`runtime::PacketController`], over `mocc_policy`). The Gymnasium
//! and PettingZoo classes are Python (python/mocc/), thin layers over these. Steps release the
//! GIL; arrays cross as NumPy arrays, written once.
//!
//! Like every crate but the trainer's, it never depends on libtorch.

use pyo3::prelude::*;

pub mod errors;
pub mod runtime;
pub mod vec_env;

/// The module `mocc._mocc`.
#[pymodule]
fn _mocc(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    m.add("ScenarioError", py.get_type::<errors::ScenarioError>())?;
    m.add("PolicyError", py.get_type::<errors::PolicyError>())?;
    m.add_class::<vec_env::VecEnv>()?;
    m.add_class::<runtime::Policy>()?;
    m.add_class::<runtime::Controller>()?;
    m.add_class::<runtime::PacketController>()?;
    m.add_function(wrap_pyfunction!(vec_env::reference_rollout, m)?)?;
    m.add("STEP_INFO_NAMES", mocc_gym::StepInfo::FIELD_NAMES.to_vec())?;
    m.add("OBJECTIVE_DIM", mocc_policy::OBJECTIVE_DIM)?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
