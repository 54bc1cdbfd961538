//! The package's exceptions: the Rust errors, message for message (they name the file and the
//! field), as Python exceptions that are also `ValueError`s.

use pyo3::exceptions::PyValueError;
use pyo3::PyErr;

pyo3::create_exception!(
    mocc,
    ScenarioError,
    PyValueError,
    "A scenario file that cannot be read or is not valid (the message names the file and the field)."
);
pyo3::create_exception!(
    mocc,
    PolicyError,
    PyValueError,
    "An export folder that cannot be loaded, or inputs a policy cannot take."
);

/// A scenario's error as [`ScenarioError`].
pub fn scenario_error(e: impl std::fmt::Display) -> PyErr {
    ScenarioError::new_err(e.to_string())
}

/// A policy's error as [`PolicyError`].
pub fn policy_error(e: impl std::fmt::Display) -> PyErr {
    PolicyError::new_err(e.to_string())
}

/// A caller's bad argument as `ValueError`.
pub fn value_error(message: impl Into<String>) -> PyErr {
    PyValueError::new_err(message.into())
}
