//! Device choice (`auto|cpu|cuda`) and libtorch's thread pool.

use serde::{Deserialize, Serialize};
use std::str::FromStr;

/// Where tensors live, as written in configs and on the command line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum DeviceChoice {
    /// CUDA device 0 when libtorch sees one, else the CPU.
    #[default]
    Auto,
    /// Always the CPU.
    Cpu,
    /// CUDA device 0; an error when none is available.
    Cuda,
}

/// Errors of device selection.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum DeviceError {
    /// The text is not one of `auto`, `cpu`, `cuda`.
    #[error("device: unknown value {0:?} (expected auto, cpu or cuda)")]
    Unknown(String),
    /// `cuda` was asked for but libtorch reports no CUDA device.
    #[error(
        "device: cuda requested but libtorch sees no CUDA device \
         (build with `make CUDA=1` / `--features cuda` on a GPU machine)"
    )]
    CudaUnavailable,
}

impl FromStr for DeviceChoice {
    type Err = DeviceError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim().to_ascii_lowercase().as_str() {
            "auto" => Ok(Self::Auto),
            "cpu" => Ok(Self::Cpu),
            "cuda" | "gpu" => Ok(Self::Cuda),
            _ => Err(DeviceError::Unknown(s.to_string())),
        }
    }
}

/// Maps a choice to a tch device, checking that CUDA exists when it is required.
pub fn resolve_device(choice: DeviceChoice) -> Result<tch::Device, DeviceError> {
    match choice {
        DeviceChoice::Cpu => Ok(tch::Device::Cpu),
        DeviceChoice::Auto => Ok(tch::Device::cuda_if_available()),
        DeviceChoice::Cuda if tch::Cuda::is_available() => Ok(tch::Device::Cuda(0)),
        DeviceChoice::Cuda => Err(DeviceError::CudaUnavailable),
    }
}

/// Sets libtorch's intra-op and inter-op thread counts.
///
/// When rayon workers simulate beside libtorch on a small machine, libtorch's own pool fights
/// them for cores (measured here: ~100x slower forward passes with 2 libtorch threads while the
/// other core was busy), so trainers call this with 1 unless configured otherwise.
///
/// libtorch accepts the inter-op count only once per process, before any parallel work; later
/// calls change the intra-op count only.
pub fn init_torch_threads(threads: usize) {
    static INTEROP: std::sync::Once = std::sync::Once::new();
    let n = i32::try_from(threads.max(1)).unwrap_or(i32::MAX);
    tch::set_num_threads(n);
    INTEROP.call_once(|| tch::set_num_interop_threads(n));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_device_names() {
        assert_eq!("auto".parse::<DeviceChoice>(), Ok(DeviceChoice::Auto));
        assert_eq!(" CPU ".parse::<DeviceChoice>(), Ok(DeviceChoice::Cpu));
        assert_eq!("cuda".parse::<DeviceChoice>(), Ok(DeviceChoice::Cuda));
        assert_eq!(
            "tpu".parse::<DeviceChoice>(),
            Err(DeviceError::Unknown("tpu".into()))
        );
    }

    #[test]
    fn cpu_device_runs_a_tensor_op() {
        init_torch_threads(1);
        let device = resolve_device(DeviceChoice::Cpu).expect("cpu always resolves");
        let t = tch::Tensor::from_slice(&[1.0f32, 2.0, 3.0]).to_device(device);
        let sum = t.sum(tch::Kind::Float).double_value(&[]);
        assert_eq!(sum, 6.0);
        assert_eq!(tch::get_num_threads(), 1);
    }

    #[test]
    fn auto_falls_back_to_cpu_without_cuda() {
        let device = resolve_device(DeviceChoice::Auto).expect("auto always resolves");
        if !tch::Cuda::is_available() {
            assert_eq!(device, tch::Device::Cpu);
            assert_eq!(
                resolve_device(DeviceChoice::Cuda),
                Err(DeviceError::CudaUnavailable)
            );
        }
    }
}
