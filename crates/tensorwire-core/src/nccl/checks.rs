//! Refusals of `nccl:` options on a fabric: one message naming the field and what is
//! allowed there.

use super::graph::nvls_capable;
use super::tables::MAX_CHANNELS;
use super::tuning::{algo_enabled, proto_enabled};
use super::{Algo, IntraLink, NcclFabric, NcclOptions, Proto};
use crate::collectives::Collective;
use crate::error::{Error, Result};
use crate::topology::NODE_PRESETS;

const TUNED: [Collective; 4] =
    [Collective::AllReduce, Collective::AllGather, Collective::ReduceScatter, Collective::Broadcast];

/// `a` runs some collective on `f`.
fn runs(f: &NcclFabric, a: Algo) -> bool {
    TUNED.iter().any(|&c| algo_enabled(f, c, a))
}

/// The algorithms the fabric runs, for messages.
fn allowed(f: &NcclFabric) -> String {
    // PAT runs only all-gather and reduce-scatter (NCCL 2.30.7): said where it is listed.
    let names: Vec<&str> = Algo::ALL
        .iter()
        .filter(|&&a| runs(f, a))
        .map(|&a| if a == Algo::Pat { "pat (all-gather and reduce-scatter only)" } else { a.name() })
        .collect();
    names.join(", ")
}

fn nvls_nodes() -> String {
    let names: Vec<String> = NODE_PRESETS.iter().filter(|p| p.nvls).map(|p| format!("rail:node={}", p.name)).collect();
    names.join(", ")
}

/// Why `a` does not run on `f`.
fn reason(f: &NcclFabric, a: Algo) -> String {
    let name = a.name();
    let multi = f.nodes > 1;
    match a {
        Algo::Nvls | Algo::NvlsTree if !nvls_capable(f) => format!(
            "{name} needs NVLink SHARP (NVSwitch on sm90 nodes: {}); this fabric has none",
            nvls_nodes()
        ),
        Algo::NvlsTree => format!("{name} runs across nodes only (NCCL disables it on one node)"),
        Algo::Nvls => {
            format!("{name} across nodes needs SHARP in the network switches (NCCL's CollNet): give the topology sharp=true")
        }
        Algo::Pat => format!(
            "{name} needs one GPU per node (NCCL enables PAT only when every node has one rank); this fabric has {} per node",
            f.gpus_per_node
        ),
        Algo::CollNetDirect | Algo::CollNetChain if !f.collnet => {
            format!("{name} needs SHARP in the network switches: give the topology sharp=true")
        }
        Algo::CollNetDirect | Algo::CollNetChain if !multi => format!("{name} runs across nodes only"),
        Algo::CollNetDirect if f.intra != IntraLink::NvSwitch => format!("{name} needs NVSwitch nodes"),
        _ => format!("{name} takes at most 8 GPUs per node; this fabric has {}", f.gpus_per_node),
    }
}

pub(super) fn check(f: &NcclFabric, o: &NcclOptions) -> Result<()> {
    if let Some(c) = o.channels {
        if c == 0 || c > MAX_CHANNELS {
            return Err(Error::invalid(
                "strategy.channels",
                format!("{c} channels; choose 1..={MAX_CHANNELS} (NCCL's MAXCHANNELS, the most a communicator runs)"),
            ));
        }
    }
    if let Some(algos) = &o.algos {
        // As NCCL_ALGO: the listed algorithms are the candidates, and those the fabric
        // cannot run are not chosen; refused only when none of them runs.
        if !algos.iter().any(|&a| runs(f, a)) {
            let a = algos[0];
            return Err(Error::invalid("strategy.algo", format!("{}; allowed here: {}", reason(f, a), allowed(f))));
        }
    }
    if o.protos.is_some() {
        let any = TUNED.iter().any(|&c| pair_exists(f, c, o));
        if !any {
            let protos: Vec<&str> = o.protos.iter().flatten().map(|p| p.name()).collect();
            let ok: Vec<&str> = Proto::ALL
                .iter()
                .filter(|&&p| {
                    let o = NcclOptions { protos: Some(vec![p]), ..o.clone() };
                    TUNED.iter().any(|&c| pair_exists(f, c, &o))
                })
                .map(|p| p.name())
                .collect();
            return Err(Error::invalid(
                "strategy.proto",
                format!(
                    "no allowed algorithm runs {} here (nvls, nvlstree, collnet and pat run only simple; ll128 needs NVLink inside the node); allowed with these algorithms: {}",
                    protos.join(", "),
                    if ok.is_empty() { "none".to_string() } else { ok.join(", ") }
                ),
            ));
        }
    }
    Ok(())
}

fn pair_exists(f: &NcclFabric, c: Collective, o: &NcclOptions) -> bool {
    Algo::ALL.iter().any(|&a| {
        o.algos.as_ref().is_none_or(|l| l.contains(&a))
            && algo_enabled(f, c, a)
            && Proto::ALL.iter().any(|&p| o.protos.as_ref().is_none_or(|l| l.contains(&p)) && proto_enabled(f, a, p))
    })
}

/// The error when `o` leaves no (algorithm, protocol) for `c` on `f`.
pub(super) fn nothing_for(f: &NcclFabric, c: Collective, o: &NcclOptions) -> Error {
    let ok: Vec<&str> = Algo::ALL.iter().filter(|&&a| algo_enabled(f, c, a)).map(|a| a.name()).collect();
    let field = if o.algos.is_some() { "strategy.algo" } else { "strategy.proto" };
    Error::invalid(
        field,
        format!("the restrictions leave NCCL nothing to run {} with here; it runs: {}", c.name(), ok.join(", ")),
    )
}
