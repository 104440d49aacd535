//! Where jobs' ranks go ([`place_jobs`]), and what it refuses.

mod common;
use common::*;
use tensorwire_core::{place_jobs, JobSeat, Result};

fn seat<'a>(name: &'a str, workers: usize, hosts: Option<&'a [usize]>) -> JobSeat<'a> {
    JobSeat { name, workers, servers: 0, hosts }
}

fn place(hosts: usize, kind: &str, jobs: &[JobSeat<'_>]) -> Result<Vec<Vec<usize>>> {
    place_jobs(&TopologySpec::parse("leaf-spine:hosts_per_leaf=4,spines=1").unwrap(), hosts, kind, 0, jobs)
}

#[test]
fn fixed_hosts_are_kept_and_the_others_follow_the_placement_order() {
    let placed = place(8, "packed", &[seat("a", 2, None), seat("b", 2, Some(&[0, 5])), seat("c", 3, None)]);
    assert_eq!(placed.unwrap(), vec![vec![1, 2], vec![0, 5], vec![3, 4, 6]]);
    // spread: hosts 0, 4, 1, 5, ... (leaves of 4 hosts, alternately).
    assert_eq!(place(8, "spread", &[seat("a", 3, None)]).unwrap(), vec![vec![0, 4, 1]]);
}

#[test]
fn bad_placements_name_the_field_and_say_what_is_wrong() {
    let err = |hosts: usize, jobs: &[JobSeat<'_>]| {
        let e = place(hosts, "packed", jobs).unwrap_err();
        (e.field().to_string(), e.to_string())
    };
    let (field, text) = err(8, &[seat("a", 6, None), seat("b", 4, None)]);
    assert_eq!(field, "workers");
    assert!(text.contains("the fabric has 8 hosts but the jobs need 10 workers (a 6, b 4)"), "{text}");
    let (field, text) = err(8, &[seat("a", 2, Some(&[1, 8]))]);
    assert_eq!(field, "jobs[0].hosts");
    assert!(text.contains("host 8 of job \"a\" is outside the fabric: its hosts are 0 to 7"), "{text}");
    let (field, text) = err(8, &[seat("a", 2, Some(&[3, 3]))]);
    assert_eq!(field, "jobs[0].hosts");
    assert!(text.contains("host 3 is given twice to job \"a\""), "{text}");
    let (field, text) = err(8, &[seat("a", 2, Some(&[0, 1])), seat("b", 2, Some(&[1, 2]))]);
    assert_eq!(field, "jobs[1].hosts");
    assert!(text.contains("host 1 of job \"b\" is also job \"a\"'s"), "{text}");
    let (field, text) = err(8, &[seat("a", 2, Some(&[0, 1, 2]))]);
    assert_eq!(field, "jobs[0].hosts");
    assert!(text.contains("gives 3 hosts for 2 workers"), "{text}");
    let (field, text) = err(8, &[seat("a", 2, None), seat("b", 1, None), seat("a", 1, None)]);
    assert_eq!(field, "jobs[2].name");
    assert!(text.contains("\"a\" is also the name of jobs[0]"), "{text}");
    assert_eq!(err(8, &[seat("", 1, None)]).0, "jobs[0].name");
    assert_eq!(err(8, &[]).0, "jobs");
}
