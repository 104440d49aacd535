//! Model-state memory per GPU: what a data-parallel rank holds of the weights, gradients and
//! optimizer state, as Rajbhandari et al. 2020 count it (ZeRO, section 3.1 and figure 1):
//! for Ψ parameters trained with mixed-precision Adam, `p` bytes of weights and `p` of
//! gradients per parameter (bf16 or fp16: 2), and K = 12 bytes of optimizer state (an fp32
//! master copy, momentum and variance). Replicated data parallelism holds (2p + K) Ψ;
//! ZeRO-1 shards the K Ψ over the N ranks, ZeRO-2 the gradients too, ZeRO-3 and FSDP
//! everything; HSDP shards over its shard group ([`Strategy::model_state_bytes`]).
//!
//! That count leaves out the parameters a rank gathers whole to compute, which ZeRO-3, FSDP
//! and HSDP hold beside their shards: a unit or a few modules at a time with the default
//! options, all of them where the options keep every unit gathered from its forward to its
//! backward (FSDP's `reshard_after_forward=false`, SHARD_GRAD_OP), wrap the model in one
//! unit, or let DeepSpeed keep everything (`max_live`, `max_reuse`).
//! [`Strategy::gathered_parameter_bytes`] counts the most of them held at once under the
//! strategy's rules for a given workload; the CLI shows the sum. Activations, the
//! gradients' unsharded buffers before their reduce-scatter, buffers for the collectives
//! and the framework's own memory come on top and are not counted.

use super::{Family, Stage, Strategy};
use crate::error::{Error, Result};
use crate::topology::TopologySpec;
use crate::workload::Workload;

/// Optimizer-state bytes per parameter under mixed-precision Adam (ZeRO's K).
pub const ADAM_STATE_BYTES: f64 = 12.0;

impl Strategy {
    /// Bytes of model state each of `workers` ranks holds for `params` parameters of
    /// `weight_bytes` bytes each (weights and gradients alike) on `topology`, as ZeRO counts
    /// them (see the module documentation): each rank's shards, whatever the options, without
    /// the parameters gathered whole ([`Strategy::gathered_parameter_bytes`]). Parameter
    /// servers' workers hold weights and gradients; the optimizer runs on the servers.
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

    /// Parameter bytes each of `workers` ranks holds *unsharded* at once, at the peak of an
    /// iteration of `workload` under this strategy on `topology`, on top of
    /// [`Strategy::model_state_bytes`] (which counts each rank's shard of them): what the
    /// sharded strategies gather to compute, in `param_dtype` (else as the workload lists
    /// them). fsdp/hsdp: the units held at once (every unit with
    /// `reshard_after_forward=false`, which holds each from its forward to its backward;
    /// otherwise the root unit, the one computing and the prefetched ones); zero3: the
    /// elements DeepSpeed's coordinator counts as gathered at its peak (`max_live` and
    /// `max_reuse` bound them) plus the persistent parameters; 0 for the other strategies,
    /// whose weights are whole on every rank and counted already. The gradients' unsharded
    /// buffers before their reduce-scatter, the collectives' buffers and activations are
    /// not counted.
    pub fn gathered_parameter_bytes(
        &self,
        workload: &Workload,
        topology: &TopologySpec,
        workers: usize,
    ) -> Result<f64> {
        workload.validate()?;
        if workers == 0 {
            return Err(Error::invalid("workers", "need workers >= 1"));
        }
        let Family::Sharded(cfg) = &self.family else { return Ok(0.0) };
        let group = match cfg.stage {
            Stage::Hsdp => crate::engine::hsdp_shard_group(cfg, &topology.build(workers, 0, 1.0, 0)?, workers)?,
            _ => workers,
        };
        Ok(crate::engine::peak_gathered_bytes(self, cfg, workload, group, workers))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workload::Tensor;

    /// [`Workload::stem_blocks_head`] in bf16: Psi = 4,408 bytes, the root 2,008, a block 600.
    fn model() -> Workload {
        let mut w = Workload::stem_blocks_head();
        w.dtype_bytes = 2;
        w
    }

    fn gathered(spec: &str) -> f64 {
        let rail = TopologySpec::parse("rail:node=dgx-h100").unwrap();
        Strategy::parse(spec).unwrap().gathered_parameter_bytes(&model(), &rail, 64).unwrap()
    }

    #[test]
    fn sharded_strategies_hold_what_their_options_gather_at_once() {
        let (psi, root, block) = (4408.0, 2008.0, 600.0);
        // SHARD_GRAD_OP keeps every unit from its forward to its backward: all of them.
        assert_eq!(gathered("fsdp:reshard_after_forward=false"), psi);
        assert_eq!(gathered("hsdp:reshard_after_forward=false"), psi);
        // One unit of every block, beside the root: the whole model at once.
        assert_eq!(gathered("fsdp:unit=1000"), psi);
        // FSDP2's defaults: the root (kept through backward), the block computing and the
        // one prefetched; without prefetch, one block.
        assert_eq!(gathered("fsdp"), root + 2.0 * block);
        assert_eq!(gathered("hsdp"), root + 2.0 * block);
        assert_eq!(gathered("fsdp:prefetch=0,backward_prefetch=0"), root + block);
        assert_eq!(gathered("fsdp:prefetch=2"), root + 3.0 * block);
        // In param_dtype: fp32 copies of a bf16 list are twice the bytes.
        assert_eq!(gathered("fsdp:reshard_after_forward=false,param_dtype=fp32"), 2.0 * psi);
        // zero3 with everything kept for reuse and no bound on live parameters: all of them.
        assert_eq!(gathered("zero3:max_live=1e11,max_reuse=1e11,param_persistence=0"), psi);
        // Persistent parameters (every one of these, at most 1e5 elements) are never released.
        assert_eq!(gathered("zero3"), psi);
        // DeepSpeed's per-submodule count bounds the rest: one parameter ahead.
        assert!(gathered("zero3:param_persistence=0,max_reuse=0,prefetch_bucket=1") < root + 2.0 * block);
        // Weights already whole on every rank: nothing more.
        for spec in ["zero1", "zero2", "ddp", "ps"] {
            assert_eq!(gathered(spec), 0.0, "{spec}");
        }
    }

    #[test]
    fn a_step_that_keeps_every_parameter_gathered_does_not_fit() {
        // Llama 3 70B on 1,024 H100 with reshard_after_forward=false: ZeRO's count, 16 Psi /
        // 1,024 = 1.03 GiB, said it fits in 80 GiB; each GPU also holds the bf16 parameters
        // of every unit from its forward to its backward, 2 Psi = 131 GiB.
        let psi = 70_553_706_496.0;
        let rail = TopologySpec::parse("rail:node=dgx-h100").unwrap();
        let s = Strategy::parse("fsdp:reshard_after_forward=false").unwrap();
        let zero = s.model_state_bytes(psi, 2.0, &rail, 1024).unwrap();
        assert!((zero / 2f64.powi(30) - 1.03).abs() < 0.01);
        let mut w = Workload::one_tensor_per_layer(&[0; 80], 10, 20);
        w.dtype_bytes = 2;
        w.tensors =
            (0..80).map(|l| Tensor { name: format!("t{l}"), bytes: (2.0 * psi / 80.0) as u64, layer: l }).collect();
        let held = s.gathered_parameter_bytes(&w, &rail, 1024).unwrap();
        assert_eq!(held, 80.0 * (2.0 * psi / 80.0).floor());
        assert!((zero + held) / 2f64.powi(30) > 132.0);
    }
}
