//! Element types of parameters and gradients on the wire (mixed precision).
//!
//! The zoo lists tensors by size in bytes at the workload's `dtype_bytes` per element
//! (4 for the CNN zoo's fp32, 2 for the bf16 LLM workloads); a strategy's `param_dtype`
//! and `reduce_dtype` say what is actually sent: PyTorch FSDP's `MixedPrecision
//! (param_dtype, reduce_dtype)`, DeepSpeed's `bf16`/`fp16` sections, DDP's bf16
//! compression hook.

use crate::error::{Error, Result};

/// An element type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dtype {
    /// IEEE single precision, 4 bytes.
    Fp32,
    /// bfloat16, 2 bytes.
    Bf16,
    /// IEEE half precision, 2 bytes.
    Fp16,
}

/// The names accepted in specs, in listing order.
pub const DTYPE_NAMES: &[&str] = &["fp32", "bf16", "fp16"];

impl Dtype {
    /// Parses `fp32`, `bf16` or `fp16` (`field` names the option in errors).
    pub fn parse(field: &str, text: &str) -> Result<Dtype> {
        match text {
            "fp32" => Ok(Dtype::Fp32),
            "bf16" => Ok(Dtype::Bf16),
            "fp16" => Ok(Dtype::Fp16),
            _ => {
                Err(Error::invalid(field, format!("unknown dtype {text:?}; choose one of {}", DTYPE_NAMES.join(", "))))
            }
        }
    }

    /// Bytes per element.
    pub fn bytes(self) -> u32 {
        match self {
            Dtype::Fp32 => 4,
            Dtype::Bf16 | Dtype::Fp16 => 2,
        }
    }

    /// Name as written in specs.
    pub fn name(self) -> &'static str {
        match self {
            Dtype::Fp32 => "fp32",
            Dtype::Bf16 => "bf16",
            Dtype::Fp16 => "fp16",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_every_listed_name_and_rejects_others() {
        for name in DTYPE_NAMES {
            assert_eq!(Dtype::parse("x", name).unwrap().name(), *name);
        }
        let e = Dtype::parse("strategy.param_dtype", "int8").unwrap_err();
        assert_eq!(e.field(), "strategy.param_dtype");
        assert!(e.to_string().contains("fp32, bf16, fp16"));
        assert_eq!(Dtype::Bf16.bytes() * 2, Dtype::Fp32.bytes());
    }
}
