//! The GPU-cluster strategies whose collectives NCCL runs (`crate::nccl`): `nccl` (every
//! gradient tensor, or a microbenchmark's collective, as one NCCL call) and `ddp`
//! (PyTorch DistributedDataParallel: gradients in buckets, one NCCL all-reduce per
//! bucket). Both run every collective on one communicator, so they serialise in release
//! order, as c10d's ProcessGroupNCCL runs them on its one NCCL stream per device
//! (docs/design/nccl-research.md section 5).

use crate::error::{Error, Result};
use crate::nccl::{self, NcclOptions};
use crate::sched::Task;
use crate::spec::Spec;
use crate::workload::Workload;

/// PyTorch DDP's buckets (`torch/csrc/distributed/c10d/reducer.hpp`:
/// `kDefaultFirstBucketBytes` = 1 MiB, `kDefaultBucketBytesCap` = 25 MiB; `bucket_cap_mb`
/// counts MiB).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Buckets {
    /// Cap of the first bucket (the gradients produced first), bytes.
    pub first_bytes: u64,
    /// Cap of every later bucket, bytes.
    pub cap_bytes: u64,
}

/// Settings of `nccl` and `ddp`.
#[derive(Debug, Clone, PartialEq)]
pub struct NcclConfig {
    /// Algorithms, protocols and channels the user allows (NCCL_ALGO, NCCL_PROTO,
    /// NCCL_MIN_NCHANNELS, PXN).
    pub options: NcclOptions,
    /// Host cost of enqueuing one NCCL kernel, seconds. Default 0: NCCL's tuning model
    /// already charges each collective its base latency (`baseLat` of
    /// `src/graph/tuning.cc`, 6.6-14 us per ring or tree call by protocol in NCCL 2.30.7,
    /// docs/design/nccl-research.md section 1.4), measured with the launch included, so a
    /// second launch cost would count it twice; give one for a host that enqueues slowly.
    pub launch_s: f64,
    /// Compute runs this much slower (a fraction) while a collective is in flight.
    pub compute_slowdown: f64,
    /// NCCL's network transport as given (`transport=tcp`: sockets; `rdma`: IB/RoCE verbs;
    /// `None`: the fabric's, `TopologySpec::nccl_transport`).
    pub transport: Option<nccl::Transport>,
    /// `ddp`: its buckets; `None` for `nccl` (one collective per tensor).
    pub buckets: Option<Buckets>,
}

/// Options whose values the table's kinds cannot hold (`algo=ring+tree`: a list), read
/// from the raw pairs before the table parses the rest.
pub(super) const RAW: [&str; 2] = ["algo", "proto"];

/// Host options `nccl`/`ddp` refuse, and why (the others apply: compression, reduce_dtype,
/// transport for NCCL's sockets or verbs, fusion and cycle for `nccl` as Horovod over NCCL).
pub(super) const NOT_FOR_NCCL: [(&str, &str); 13] = [
    ("partition", "NCCL runs each tensor or bucket as one call and splits it into channels and chunks itself"),
    ("schedule", "NCCL runs its calls in issue order on one communicator"),
    ("credit", "one communicator runs one collective at a time"),
    ("inflight", "one communicator runs one collective at a time"),
    ("execution", "one communicator is one stream"),
    ("dispatch", "use launch=DURATION, the host cost of each NCCL call"),
    ("partial", "partial collectives apply to the flow-level all-reduce strategies"),
    ("max_lag", "partial collectives apply to the flow-level all-reduce strategies"),
    ("segments", "NCCL's protocols are in its timing"),
    ("connections", "NCCL's timing needs no connections"),
    ("overhead", "NCCL's latencies are in its timing; calibrate them on the topology (inter_latency=)"),
    ("copy", "NCCL's bandwidths are in its timing; calibrate them on the topology (inter_efficiency=)"),
    ("reduce", "NCCL reduces on the GPUs at its own bandwidths; calibrate them on the topology (intra_efficiency=)"),
];

/// Host options `ddp` refuses besides [`NOT_FOR_NCCL`].
pub(super) const NOT_FOR_DDP: [(&str, &str); 2] = [
    ("fusion", "ddp buckets gradients with bucket=SIZE (fusion and cycle are Horovod's; use nccl:fusion=SIZE for Horovod over NCCL)"),
    ("cycle", "ddp buckets gradients with bucket=SIZE (fusion and cycle are Horovod's; use nccl:fusion=SIZE for Horovod over NCCL)"),
];

/// Takes the [`RAW`] options out of `pairs`, parsed.
pub(super) fn take_raw(pairs: &mut Vec<(String, String)>) -> Result<NcclOptions> {
    let mut options = NcclOptions::default();
    let mut seen: Vec<&str> = Vec::new();
    let mut rest = Vec::new();
    for (k, v) in pairs.drain(..) {
        let Some(&name) = RAW.iter().find(|r| **r == k) else {
            rest.push((k, v));
            continue;
        };
        if seen.contains(&name) {
            return Err(Error::invalid(format!("strategy.{name}"), "given twice"));
        }
        seen.push(name);
        match name {
            "algo" => options.algos = Some(NcclOptions::parse_algos(&v)?),
            _ => options.protos = Some(NcclOptions::parse_protos(&v)?),
        }
    }
    *pairs = rest;
    Ok(options)
}

/// The largest `compute_slowdown=` (compute 11x as long while a collective runs): the
/// published measurements are 0-40% (arXiv 2507.03114), so more is an input mistake.
pub const MAX_COMPUTE_SLOWDOWN: f64 = 10.0;

/// `compute_slowdown=` of `nccl`, `ddp` and the sharded strategies: a fraction in [0, 10]
/// (0: compute never slows; 10: eleven times slower, beyond anything measured).
pub(super) fn compute_slowdown(spec: &Spec) -> Result<Option<f64>> {
    Ok(spec.real("compute_slowdown"))
}

/// NCCL's network transport under the strategy's `transport=` preset (`nccl`, `ddp` and the
/// sharded strategies): NCCL's socket transport for `tcp`, its IB/RoCE transport for the
/// others; `None` where not given (the fabric's: `TopologySpec::nccl_transport`).
pub(super) fn transport(spec: &Spec) -> Option<nccl::Transport> {
    spec.choice("transport").map(|t| if t == "tcp" { nccl::Transport::Tcp } else { nccl::Transport::Rdma })
}

/// The settings of `nccl` (`ddp` false) or `ddp` from `spec` and the raw options.
pub(super) fn config(ddp: bool, spec: &Spec, mut options: NcclOptions) -> Result<NcclConfig> {
    let slowdown = compute_slowdown(spec)?;
    options.channels = spec.count("channels").map(|c| c as usize);
    if let Some(c) = options.channels {
        crate::limits::at_most("strategy.channels", c as u64, 64, "channels (NCCL's MAXCHANNELS)")?;
    }
    options.pxn = spec.flag("pxn").unwrap_or(false);
    let launch_s = spec.duration("launch").unwrap_or(0.0);
    // Checked here, under its own name: the engine checks it again as the dispatch cost
    // it becomes (`Strategy::dispatch_s`), whose field name the user never wrote.
    crate::units::seconds_to_nanos("strategy.launch", launch_s)?;
    let buckets = ddp.then(|| Buckets {
        first_bytes: spec.bytes("first_bucket").map_or(1 << 20, |b| b.round() as u64).max(1),
        cap_bytes: spec.bytes("bucket").map_or(25 << 20, |b| b.round() as u64).max(1),
    });
    Ok(NcclConfig {
        options,
        launch_s,
        compute_slowdown: slowdown.unwrap_or(nccl::DEFAULT_COMPUTE_SLOWDOWN),
        transport: transport(spec),
        buckets,
    })
}

/// DDP's bucket assignment (`compute_bucket_assignment_by_size` in c10d's reducer): the
/// tensors in reverse registration order (the order the backward pass produces them) fill
/// a bucket until it holds at least its cap (the first bucket `first_bytes`, later ones
/// `cap_bytes`; the tensor that crosses the cap stays in the bucket). Each bucket is one
/// task, ready when its last gradient is: the one of the lowest tensor index, whose layer
/// and index it carries. Tasks are listed in `parameters()` order (the first-produced
/// bucket last), as [`crate::sched::partition`] lists them.
pub fn ddp_buckets(workload: &Workload, buckets: Buckets) -> Vec<Task> {
    let mut out: Vec<(usize, u64)> = Vec::new();
    let (mut bytes, mut cap) = (0u64, buckets.first_bytes);
    let mut open = false;
    for t in (0..workload.tensors.len()).rev() {
        bytes = bytes.saturating_add(workload.tensors[t].bytes);
        open = true;
        if bytes >= cap {
            out.push((t, bytes));
            (bytes, cap, open) = (0, buckets.cap_bytes, false);
        }
    }
    if open {
        out.push((0, bytes));
    }
    out.reverse();
    out.into_iter()
        .enumerate()
        .map(|(id, (tensor, bytes))| Task {
            id,
            tensor,
            piece: 0,
            offset: 0,
            bytes,
            layer: workload.tensors[tensor].layer,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Bucket boundaries as a closed form: 2 MiB of 512 KiB tensors then 40 MiB of
    /// 10 MiB tensors, read backwards: the first bucket closes at 1 MiB (two of the last
    /// tensors), every later one at the first sum >= 25 MiB.
    #[test]
    fn ddp_buckets_fill_in_reverse_order_first_one_mib_then_25_mib() {
        const K: u64 = 1 << 10;
        const M: u64 = 1 << 20;
        // Registration order: 4 x 10 MiB (layers 0-3), then 4 x 512 KiB (layers 4-7).
        let mut sizes = vec![10 * M; 4];
        sizes.extend([512 * K; 4]);
        let w = Workload::one_tensor_per_layer(&sizes, 0, 0);
        let tasks = ddp_buckets(&w, Buckets { first_bytes: M, cap_bytes: 25 * M });
        let got: Vec<(usize, u64)> = tasks.iter().map(|t| (t.tensor, t.bytes)).collect();
        // Backwards: 7+6 = 1 MiB (first bucket), 5+4+3+2+1 = 1 MiB + 30 MiB >= 25 MiB
        // (crosses at tensor 1: 1 + 10 + 10 + 10 = 31 MiB), then tensor 0 alone (the rest).
        assert_eq!(got, vec![(0, 10 * M), (1, M + 30 * M), (6, M)]);
        assert_eq!(tasks.iter().map(|t| t.id).collect::<Vec<_>>(), vec![0, 1, 2]);
        assert_eq!(tasks.iter().map(|t| t.bytes).sum::<u64>(), sizes.iter().sum::<u64>());
    }

    #[test]
    fn one_huge_tensor_is_one_bucket_and_small_models_one_bucket() {
        let w = Workload::one_tensor_per_layer(&[100 << 20], 0, 0);
        let t = ddp_buckets(&w, Buckets { first_bytes: 1 << 20, cap_bytes: 25 << 20 });
        assert_eq!(t.len(), 1);
        let w = Workload::one_tensor_per_layer(&[1000, 1000, 1000], 0, 0);
        let t = ddp_buckets(&w, Buckets { first_bytes: 1 << 20, cap_bytes: 25 << 20 });
        assert_eq!((t.len(), t[0].bytes, t[0].tensor), (1, 3000, 0));
    }

    #[test]
    fn parses_nccl_names_and_refuses_what_does_not_apply() {
        use super::super::{Family, Strategy};
        use crate::nccl::{Algo, Proto};
        let s = Strategy::parse("nccl:algo=ring+tree,proto=LL128,channels=8,launch=5us,compute_slowdown=0").unwrap();
        let Family::Nccl(c) = &s.family else { panic!("nccl") };
        assert_eq!(c.options.algos, Some(vec![Algo::Ring, Algo::Tree]));
        assert_eq!(c.options.protos, Some(vec![Proto::Ll128]));
        assert_eq!((c.options.channels, c.launch_s, c.compute_slowdown, c.buckets), (Some(8), 5e-6, 0.0, None));
        // One communicator: a stream, everything ready released; launch is its dispatch.
        assert!(s.stream && s.limits.max_tasks.is_none() && s.dispatch_s == 5e-6);
        let Family::Nccl(d) = Strategy::parse("ddp").unwrap().family else { panic!("ddp") };
        assert_eq!(d.buckets, Some(Buckets { first_bytes: 1 << 20, cap_bytes: 25 << 20 }));
        assert_eq!(d.compute_slowdown, crate::nccl::DEFAULT_COMPUTE_SLOWDOWN);
        assert_eq!(d.transport, None);
        let Family::Nccl(t) = Strategy::parse("ddp:transport=tcp").unwrap().family else { panic!("ddp") };
        assert_eq!(t.transport, Some(crate::nccl::Transport::Tcp));
        let field = |spec: &str| Strategy::parse(spec).unwrap_err().field().to_string();
        assert_eq!(field("nccl:algo=ring+bogus"), "strategy.algo");
        assert_eq!(field("nccl:proto=fast"), "strategy.proto");
        assert_eq!(field("nccl:channels=65"), "strategy.channels");
        assert_eq!(field("nccl:channels=0"), "strategy.channels");
        assert_eq!(field("nccl:algo=ring,algo=tree"), "strategy.algo");
        assert_eq!(field("ddp:compute_slowdown=-1"), "strategy.compute_slowdown");
        assert_eq!(field("ddp:fusion=64MiB"), "strategy.fusion");
        assert_eq!(field("nccl:dispatch=1ms"), "strategy.dispatch");
        assert_eq!(field("nccl:partition=1MiB"), "strategy.partition");
        assert_eq!(field("ring:algo=ring"), "strategy.algo");
        // Horovod over NCCL: its fusion buffer in front of NCCL's calls.
        assert!(Strategy::parse("nccl:fusion=64MiB,cycle=5ms").unwrap().fusion.is_some());
        let e = Strategy::parse("nccl:proto=fast").unwrap_err().to_string();
        assert!(!e.contains('\n') && e.contains("ll, ll128, simple"), "{e}");
    }

    /// A launch cost past the simulation horizon is refused under the name the user wrote
    /// (`launch`), not as the dispatch cost the engine turns it into.
    #[test]
    fn launch_past_the_horizon_is_refused_as_launch() {
        use super::super::Strategy;
        for spec in ["nccl:launch=1e300s", "ddp:launch=1e10s"] {
            let e = Strategy::parse(spec).unwrap_err();
            assert_eq!(e.field(), "strategy.launch", "{spec}: {e}");
        }
        assert!(Strategy::parse("nccl:launch=1000s").is_ok());
    }
}
