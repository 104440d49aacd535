//! Closed-form checks of both network models.

use super::*;

fn run_all(model: &mut dyn NetworkModel) -> Vec<(u64, Nanos)> {
    let mut delivered = Vec::new();
    let mut out = Vec::new();
    while let Some(t) = model.next_time() {
        out.clear();
        model.advance(t, &mut out);
        for e in &out {
            if let FlowEvent::Delivered(tag) = e {
                delivered.push((*tag, t));
            }
        }
    }
    delivered.sort();
    delivered
}

fn flow(links: &[(LinkId, u32)], bytes: f64, latency: Nanos, tag: u64) -> FlowSpec<'_> {
    FlowSpec { links, bytes, latency, rate_cap: f64::INFINITY, tag, notify_sent: false }
}

#[test]
fn single_transfer_takes_latency_plus_size_over_bandwidth() {
    for kind in [ModelKind::Flow, ModelKind::Analytical] {
        let mut m = kind.build(vec![2.0, 2.0]);
        m.start(100, flow(&[(0, 1), (1, 1)], 1000.0, 50, 7));
        assert_eq!(run_all(m.as_mut()), vec![(7, 100 + 500 + 50)], "{}", m.name());
    }
}

#[test]
fn incast_shares_the_receiver_link_equally() {
    // N senders, each on its own uplink (cap 1), into one downlink (cap 1): each gets 1/N.
    let n = 8u64;
    let mut m = MaxMinFair::new(vec![1.0; n as usize + 1]);
    let paths: Vec<Vec<(LinkId, u32)>> = (0..n as usize).map(|i| vec![(i, 1), (n as usize, 1)]).collect();
    for (i, p) in paths.iter().enumerate() {
        m.start(0, flow(p, 100.0, 0, i as u64));
    }
    let done = run_all(&mut m);
    assert!(done.iter().all(|&(_, t)| t == 100 * n), "{done:?}");
}

#[test]
fn dumbbell_with_unequal_flows_is_max_min_fair() {
    // Link 0 cap 10 carries f1 and f2; link 1 cap 4 carries f2 and f3.
    // Max-min: link 1 is the bottleneck (4/2 = 2 each for f2, f3); f1 gets 10 - 2 = 8.
    let mut m = MaxMinFair::new(vec![10.0, 4.0]);
    m.start(0, flow(&[(0, 1)], 800.0, 0, 1));
    m.start(0, flow(&[(0, 1), (1, 1)], 200.0, 0, 2));
    m.start(0, flow(&[(1, 1)], 400.0, 0, 3));
    assert_eq!(m.rate_of(&[(0, 1)]), Some(8.0));
    assert_eq!(m.rate_of(&[(0, 1), (1, 1)]), Some(2.0));
    assert_eq!(m.rate_of(&[(1, 1)]), Some(2.0));
    // f1: 800 / 8 = 100. f2: 200 / 2 = 100. f3: 200 bytes by t=100, then alone at 4: +50.
    assert_eq!(run_all(&mut m), vec![(1, 100), (2, 100), (3, 150)]);
}

#[test]
fn freed_bandwidth_is_redistributed() {
    let mut m = MaxMinFair::new(vec![2.0]);
    m.start(0, flow(&[(0, 1)], 100.0, 0, 1));
    m.start(0, flow(&[(0, 1)], 300.0, 0, 2));
    // Both at 1 B/ns until t=100, then flow 2 alone at 2 B/ns for its last 200 bytes.
    assert_eq!(run_all(&mut m), vec![(1, 100), (2, 200)]);
}

#[test]
fn rate_cap_limits_a_flow_and_leaves_the_rest_to_others() {
    let mut m = MaxMinFair::new(vec![10.0]);
    m.start(0, FlowSpec { links: &[(0, 1)], bytes: 100.0, latency: 0, rate_cap: 1.0, tag: 1, notify_sent: false });
    m.start(0, flow(&[(0, 1)], 900.0, 0, 2));
    assert_eq!(run_all(&mut m), vec![(1, 100), (2, 100)]);
}

#[test]
fn a_weighted_flow_equals_its_unfolded_images() {
    // 4 senders into one downlink, written once with weight 4 on the shared link.
    let mut folded = MaxMinFair::new(vec![1.0, 1.0]);
    folded.start(0, flow(&[(0, 1), (1, 4)], 100.0, 3, 9));
    let mut unfolded = MaxMinFair::new(vec![1.0; 5]);
    let paths: Vec<Vec<(LinkId, u32)>> = (0..4).map(|i| vec![(i, 1), (4, 1)]).collect();
    for (i, p) in paths.iter().enumerate() {
        unfolded.start(0, flow(p, 100.0, 3, i as u64));
    }
    let t_folded = run_all(&mut folded)[0].1;
    assert!(run_all(&mut unfolded).iter().all(|&(_, t)| t == t_folded));
    assert_eq!(t_folded, 403);
    assert!((folded.link_bytes(403)[1] - 400.0).abs() < 1e-6);
}

#[test]
fn sent_precedes_delivered_by_the_latency() {
    let mut m = MaxMinFair::new(vec![1.0]);
    m.start(
        0,
        FlowSpec { links: &[(0, 1)], bytes: 10.0, latency: 5, rate_cap: f64::INFINITY, tag: 4, notify_sent: true },
    );
    let mut events = Vec::new();
    while let Some(t) = m.next_time() {
        let mut out = Vec::new();
        m.advance(t, &mut out);
        events.extend(out.into_iter().map(|e| (t, e)));
    }
    assert_eq!(events, vec![(10, FlowEvent::Sent(4)), (15, FlowEvent::Delivered(4))]);
}

#[test]
fn models_agree_without_contention() {
    let links: Vec<Vec<(LinkId, u32)>> = (0..4).map(|i| vec![(2 * i, 1), (2 * i + 1, 1)]).collect();
    let mut a = AlphaBeta::new(vec![1.5; 8]);
    let mut f = MaxMinFair::new(vec![1.5; 8]);
    for (i, p) in links.iter().enumerate() {
        a.start(10, flow(p, 1000.0 * (i + 1) as f64, 20, i as u64));
        f.start(10, flow(p, 1000.0 * (i + 1) as f64, 20, i as u64));
    }
    assert_eq!(run_all(&mut a), run_all(&mut f));
}

/// The lanes fast path is a capability a model offers, not a method every model has:
/// both shipped models offer it, the reference max-min model (which implements only the
/// required methods) does not, and what it offers times a flow alone as the events do.
#[test]
fn the_lanes_fast_path_is_an_optional_capability() {
    for kind in [ModelKind::Flow, ModelKind::Analytical] {
        let mut timed = kind.build(vec![2.0, 2.0]);
        let alone = timed.alone().expect("the shipped models time flows alone");
        let mut memo = None;
        let sent = alone.time_alone(100, &flow(&[(0, 1), (1, 1)], 1000.0, 50, 7), &mut memo);
        assert_eq!(sent, Some(100 + 500), "{}", timed.name());
        let name = timed.name();
        assert_eq!(timed.link_bytes(600), &[1000.0, 1000.0], "{name}");
    }
    assert!(ModelKind::FlowReference.build(vec![2.0]).alone().is_none());
}
