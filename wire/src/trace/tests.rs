use super::*;

const PARENT: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

#[test]
fn a_valid_parent_is_kept_and_read() {
    let context =
        TraceContext::parse(PARENT, Some("rojo=00f067aa0ba902b7,congo=t61rcWkgMzE")).unwrap();
    assert_eq!(context.traceparent(), PARENT);
    assert_eq!(context.trace_id(), "4bf92f3577b34da6a3ce929d0e0e4736");
    assert_eq!(context.parent_id(), "00f067aa0ba902b7");
    assert!(context.sampled());
    assert_eq!(
        context.tracestate(),
        "rojo=00f067aa0ba902b7,congo=t61rcWkgMzE"
    );
    let unsampled = PARENT.replace("-01", "-00");
    assert!(!TraceContext::parse(&unsampled, None).unwrap().sampled());
}

#[test]
fn what_w3c_does_not_allow_is_turned_away() {
    let bad = [
        "",
        "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7",
        "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
        "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",
        "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",
        "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
        "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-extra",
        "00_4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
        "0g-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
    ];
    for parent in bad {
        assert_eq!(TraceContext::parse(parent, Some("a=b")), None, "{parent:?}");
    }
    // A later version may carry more fields: the ones version 00 defines are kept.
    let later = "01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-more";
    assert_eq!(
        TraceContext::parse(later, None).unwrap().traceparent(),
        &later[..55]
    );
}

#[test]
fn a_bad_state_is_dropped_and_the_parent_kept() {
    let long = format!("a={}", "x".repeat(MAX_TRACESTATE));
    let many = (0..33)
        .map(|i| format!("k{i}=v"))
        .collect::<Vec<_>>()
        .join(",");
    for state in [
        "novalue",
        "=v",
        "k=",
        "K=v",
        "k=v,x",
        long.as_str(),
        many.as_str(),
    ] {
        let context = TraceContext::parse(PARENT, Some(state)).unwrap();
        assert_eq!(context.tracestate(), "", "{state:?}");
    }
    let spaced = TraceContext::parse(PARENT, Some(" a=1 , ,b@v=2 ")).unwrap();
    assert_eq!(spaced.tracestate(), "a=1 , ,b@v=2");
}

#[test]
fn a_content_type_carries_the_context_both_ways() {
    let context = TraceContext::parse(PARENT, Some("a=x\"y\\z,b=2")).unwrap();
    let content_type = context.in_content_type("application/json");
    assert_eq!(
        content_type,
        format!("application/json; traceparent={PARENT}; tracestate=\"a=x\\\"y\\\\z,b=2\"")
    );
    assert_eq!(
        TraceContext::from_content_type(&content_type),
        Some(context.clone())
    );
    assert_eq!(media_type(&content_type), "application/json");
    // Writing it again replaces the parameters it had.
    let again = context.in_content_type(&content_type);
    assert_eq!(again, content_type);
    let bare = TraceContext::parse(PARENT, None).unwrap();
    assert_eq!(
        bare.in_content_type("application/json"),
        format!("application/json; traceparent={PARENT}")
    );
    // Records without one, or with something else, carry none.
    for plain in [
        "application/json",
        "",
        "application/json; charset=utf-8",
        "a; traceparent=nope",
        "a; tracestate=\"x",
    ] {
        assert_eq!(TraceContext::from_content_type(plain), None, "{plain:?}");
    }
    assert_eq!(
        TraceContext::from_content_type(&format!(
            "application/json;charset=utf-8;TraceParent={PARENT}"
        )),
        Some(bare)
    );
}

#[test]
fn a_child_keeps_the_trace_flags_and_state() {
    let context = TraceContext::parse(PARENT, Some("a=1")).unwrap();
    let child = context.child("b7ad6b7169203331").unwrap();
    assert_eq!(
        child.traceparent(),
        "00-4bf92f3577b34da6a3ce929d0e0e4736-b7ad6b7169203331-01"
    );
    assert_eq!(child.tracestate(), "a=1");
    assert_eq!(context.child("0000000000000000"), None);
    assert_eq!(context.child("short"), None);
}

#[test]
fn pairs_give_the_context_of_their_trace_entries_in_any_case() {
    let pairs = [
        ("Content-Type", "application/json"),
        ("TraceParent", PARENT),
        ("tracestate", "a=1"),
        ("TRACESTATE", "b=2"),
    ];
    let context = TraceContext::from_pairs(pairs).unwrap();
    assert_eq!(context.traceparent(), PARENT);
    assert_eq!(context.tracestate(), "a=1,b=2");
    // None, a bad one, two parents: no context.
    assert_eq!(TraceContext::from_pairs([("tracestate", "a=1")]), None);
    assert_eq!(TraceContext::from_pairs([("traceparent", "00-nope")]), None);
    let twice = [("traceparent", PARENT), ("Traceparent", PARENT)];
    assert_eq!(TraceContext::from_pairs(twice), None);
}
