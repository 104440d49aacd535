//! Collective microbenchmarks written `COLLECTIVE:SIZE[xCOUNT]`: `allreduce`,
//! `reducescatter`, `allgather`, `broadcast`, `alltoall` (docs/collectives.md).

use super::{Layer, Tensor, Workload};
use crate::collectives::{Collective, COLLECTIVE_NAMES};
use crate::error::{Error, Result};
use crate::units::parse_bytes;

/// `allgather:1MiBx50`: COUNT back-to-back collectives of SIZE bytes each (the full buffer:
/// see docs/collectives.md), with no compute; all tensors are ready at time 0, so the
/// strategy's scheduler issues them in order. The batch size is 1 so throughput reads as
/// iterations per second per worker.
pub fn collective_benchmark(spec: &str) -> Result<Workload> {
    let field = "collective";
    let bad = |why: &str| {
        Error::invalid(
            field,
            format!(
                "{spec:?} {why}; write COLLECTIVE:SIZE[xCOUNT] with COLLECTIVE one of {}, e.g. allreduce:1MiBx50",
                COLLECTIVE_NAMES.join(", ")
            ),
        )
    };
    let Some((kind, rest)) = spec.split_once(':') else {
        return Err(bad("is not a collective microbenchmark"));
    };
    let collective = Collective::parse(field, kind).map_err(|_| bad("names no collective"))?;
    let (size, count) = match rest.rsplit_once('x') {
        Some((s, c)) => {
            let count = c.parse::<u32>().map_err(|_| {
                if !c.is_empty() && c.bytes().all(|b| b.is_ascii_digit()) {
                    bad(&format!("has a COUNT above {}, the buffers a run can hold", crate::limits::MAX_LAYERS))
                } else {
                    bad("has a COUNT that is not an integer")
                }
            })?;
            (s, count)
        }
        None => (rest, 1),
    };
    if count == 0 {
        return Err(bad("has COUNT 0"));
    }
    let bytes = parse_bytes(field, size)?;
    if bytes < 1.0 {
        return Err(bad("has a SIZE below 1 byte"));
    }
    // A buffer is whole bytes: 1.5B was rounded to 2 without a word. (Within a millionth of
    // a byte counts as whole, for sizes such as 0.3MB.)
    if (bytes - bytes.round()).abs() > 1e-6 {
        return Err(bad(&format!(
            "has a SIZE of {} bytes; give a whole number of bytes",
            crate::units::format_number(bytes)
        )));
    }
    let max = crate::limits::MAX_BYTES;
    if bytes * f64::from(count) > max as f64 {
        return Err(bad(&format!("asks for more than the {max} bytes (8 PiB) a run can hold")));
    }
    if count as usize > crate::limits::MAX_LAYERS {
        return Err(bad(&format!("has a COUNT above {}, the buffers a run can hold", crate::limits::MAX_LAYERS)));
    }
    let layers = (0..count).map(|i| Layer { name: format!("{kind}{i}"), forward: 0, backward: 0 }).collect();
    let tensors = (0..count as usize)
        .map(|i| Tensor { name: format!("buffer{i}"), bytes: bytes.round() as u64, layer: i })
        .collect();
    Ok(Workload { name: spec.to_string(), batch_size: 1, layers, tensors, dtype_bytes: 4, collective })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_size_and_count() {
        let w = collective_benchmark("allreduce:1MiBx50").unwrap();
        assert_eq!(w.tensors.len(), 50);
        assert!(w.tensors.iter().all(|t| t.bytes == 1 << 20));
        assert_eq!(w.compute_time(), 0);
        assert_eq!(collective_benchmark("allreduce:4MB").unwrap().tensors.len(), 1);
    }

    #[test]
    fn rejects_malformed_specs() {
        assert_eq!(collective_benchmark("allgather:1MiBx3").unwrap().collective, Collective::AllGather);
        assert_eq!(collective_benchmark("alltoall:1MB").unwrap().collective, Collective::AllToAll);
        assert_eq!(collective_benchmark("allreduce:0.3MB").unwrap().tensors[0].bytes, 300_000);
        for bad in [
            "gather:1MiB",
            "allreduce",
            "allreduce:",
            "allreduce:1MiBx0",
            "allreduce:1MiBxq",
            "allreduce:0B",
            "allreduce:1.5B",
            "allreduce:0.1KiB",
        ] {
            let e = collective_benchmark(bad).unwrap_err();
            assert_eq!(e.field(), "collective", "{bad}");
        }
    }
}
