//! Model-state memory per GPU: what a data-parallel rank holds of the weights, gradients and
//! optimizer state, as Rajbhandari et al. 2020 count it (ZeRO, section 3.1 and figure 1):
//! for Ψ parameters trained with mixed-precision Adam, `p` bytes of weights and `p` of
//! gradients per parameter (bf16 or fp16: 2), and K = 12 bytes of optimizer state (an fp32
//! master copy, momentum and variance). Replicated data parallelism holds (2p + K) Ψ;
//! ZeRO-1 shards the K Ψ over the N ranks, ZeRO-2 the gradients too, ZeRO-3 and FSDP
//! everything; HSDP shards over its shard group. Activations, buffers for the collectives
//! and the framework's own memory come on top and are not counted.

use super::{Family, Stage, Strategy};
use crate::error::{Error, Result};
use crate::topology::TopologySpec;

/// Optimizer-state bytes per parameter under mixed-precision Adam (ZeRO's K).
pub const ADAM_STATE_BYTES: f64 = 12.0;

impl Strategy {
    /// Bytes of model state each of `workers` ranks holds for `params` parameters of
    /// `weight_bytes` bytes each (weights and gradients alike) on `topology` (see the
    /// module documentation). Parameter servers' workers hold weights and gradients; the
    /// optimizer runs on the servers.
    ///
    /// ```
    /// use tensorwire_core::strategy::Strategy;
    /// use tensorwire_core::topology::TopologySpec;
    /// let rail = TopologySpec::parse("rail:node=dgx-h100").unwrap();
    /// let gb = |s: &str| Strategy::parse(s).unwrap().model_state_bytes(70e9, 2.0, &rail, 64).unwrap() / 1e9;
    /// assert_eq!(gb("ddp"), 1120.0); // 16 bytes per parameter
    /// assert_eq!(gb("zero3"), 17.5); // 1120 / 64
    /// assert_eq!(gb("hsdp"), 140.0); // 1120 / 8 GPUs of a node
    /// ```
    pub fn model_state_bytes(
        &self,
        params: f64,
        weight_bytes: f64,
        topology: &TopologySpec,
        workers: usize,
    ) -> Result<f64> {
        if !(params.is_finite() && params >= 0.0 && weight_bytes.is_finite() && weight_bytes > 0.0) || workers == 0 {
            return Err(Error::invalid("params", "need parameters >= 0, bytes per weight > 0 and workers >= 1"));
        }
        let (w, g, k) = (weight_bytes * params, weight_bytes * params, ADAM_STATE_BYTES * params);
        let n = workers as f64;
        Ok(match &self.family {
            Family::Sharded(cfg) => match cfg.stage {
                Stage::Zero1 => w + g + k / n,
                Stage::Zero2 => w + (g + k) / n,
                Stage::Zero3 | Stage::Fsdp => (w + g + k) / n,
                Stage::Hsdp => {
                    let topo = topology.build(workers, 0, 1.0, 0)?;
                    (w + g + k) / crate::engine::hsdp_shard_group(cfg, &topo, workers)? as f64
                }
            },
            Family::ParameterServer(_) => w + g,
            _ => w + g + k,
        })
    }
}
