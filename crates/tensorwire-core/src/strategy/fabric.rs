//! What a strategy needs of the fabric it runs on, beyond its own options.

use super::{Family, Strategy};
use crate::error::{Error, Result};
use crate::topology::{Shape, Topology};

impl Strategy {
    /// Whether NCCL's closed-form model times this strategy's collectives on `topology`
    /// (no flows): `nccl`, `ddp`, and the sharded strategies under `comm=nccl`, their
    /// default on GPU fabrics ([`super::ShardedConfig::comm_on`]). Such a run does not see
    /// the cluster's per-hop latency, host overhead or rank placement.
    pub fn timed_by_nccl(&self, topology: &crate::topology::TopologySpec) -> bool {
        match &self.family {
            Family::Nccl(_) => true,
            Family::Sharded(cfg) => cfg.comm_on(topology) == super::Comm::Nccl,
            _ => false,
        }
    }

    /// What this strategy needs of the fabric `topo` and of its own options together,
    /// beyond `Scenario::validate`: in-network aggregation a star, multicast switches
    /// that replicate (star or leaf-spine), and no options that could deadlock or
    /// contradict.
    pub fn check_on_fabric(&self, topo: &Topology) -> Result<()> {
        if let Family::ParameterServer(c) = &self.family {
            if c.in_network_aggregation && !matches!(topo.shape(), Shape::Star) {
                return Err(Error::invalid(
                    "topology",
                    "in-network aggregation is modelled on a star (one aggregating switch)",
                ));
            }
            if c.switch_memory.is_some() && self.limits.credit_bytes.is_some() {
                return Err(Error::invalid(
                    "strategy.credit",
                    "cannot be combined with switch_memory (pushes could wait on each other forever)",
                ));
            }
        }
        let multicast = match &self.family {
            Family::AllReduce(a) => a.multicast(),
            Family::ParameterServer(c) => c.multicast,
            Family::Sharded(_) | Family::Nccl(_) => false,
        };
        if multicast && !matches!(topo.shape(), Shape::Star | Shape::LeafSpine { .. }) {
            return Err(Error::invalid(
                "topology",
                "multicast needs switches to replicate packets (star or leaf-spine)",
            ));
        }
        Ok(())
    }
}
