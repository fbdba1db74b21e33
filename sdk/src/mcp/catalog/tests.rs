#![allow(clippy::unwrap_used)]

use serde_json::json;

use super::*;

#[test]
fn resources_come_inline_or_from_a_file() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("logo.png"), [0x89, b'P', b'N', b'G']).unwrap();
    std::fs::write(dir.path().join("readme.md"), "# Hello").unwrap();
    let resources = resources_from_json(
        json!([
            {"uri": "docs://text", "name": "text", "mimeType": "text/plain", "text": "hi"},
            {"uri": "docs://blob", "name": "blob", "mimeType": "image/png", "blob": "iVBORw=="},
            {"uri": "docs://logo", "name": "logo", "mimeType": "image/png", "file": "logo.png"},
            {"uri": "docs://readme", "name": "readme", "mimeType": "text/markdown", "file": "readme.md"}
        ]),
        Some(dir.path()),
    )
    .unwrap();
    let bodies: Vec<&ResourceBody> = resources.iter().map(|r| &r.body).collect();
    assert_eq!(
        bodies,
        [
            &ResourceBody::Text("hi".into()),
            &ResourceBody::Blob(vec![0x89, b'P', b'N', b'G']),
            &ResourceBody::Blob(vec![0x89, b'P', b'N', b'G']),
            &ResourceBody::Text("# Hello".into()),
        ]
    );
    assert_eq!(resources[3].resource.size, Some(7));
    assert_eq!(resources[0].resource.name, "text");
    for bad in [
        json!([{"uri": "x://a", "name": "a"}]),
        json!([{"uri": "x://a", "name": "a", "text": "t", "blob": "AA=="}]),
        json!([{"uri": "x://a", "name": "a", "blob": "not base64!"}]),
        json!([{"uri": "x://a", "name": "a", "file": "missing.bin"}]),
        json!([{"uri": "x://a", "text": "no name"}]),
        json!({"uri": "x://a"}),
    ] {
        let error = resources_from_json(bad.clone(), Some(dir.path())).unwrap_err();
        assert_eq!(error.kind(), ErrorKind::Config, "{bad}");
    }
}

#[test]
fn prompts_keep_their_argument_values_apart_and_inline_files() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("dot.png"), [1, 2, 3]).unwrap();
    let prompts = prompts_from_json(
        json!([{
            "name": "greet", "description": "Greets",
            "arguments": [{"name": "who", "required": true, "values": ["Ada", "Alan"]}],
            "messages": [
                {"role": "user", "content": {"type": "text", "text": "Greet {who}"}},
                {"role": "user", "content": {"type": "image", "file": "dot.png", "mimeType": "image/png"}}
            ]
        }]),
        Some(dir.path()),
    )
    .unwrap();
    let greet = &prompts[0];
    assert_eq!(greet.completions["who"], ["Ada", "Alan"]);
    assert_eq!(
        serde_json::to_value(&greet.prompt).unwrap(),
        json!({"name": "greet", "description": "Greets", "arguments": [{"name": "who", "required": true}]})
    );
    assert_eq!(
        serde_json::to_value(&greet.messages[1]).unwrap()["content"]["data"],
        "AQID"
    );
    let error = prompts_from_json(
        json!([{"name": "p", "messages": [{"role": "robot"}]}]),
        None,
    );
    assert_eq!(error.unwrap_err().kind(), ErrorKind::Config);
}

#[test]
fn the_catalog_refuses_clashes_and_finds_by_uri_and_template() {
    let resources = resources_from_json(
        json!([{"uri": "test://static-text", "name": "t", "text": "x"}]),
        None,
    )
    .unwrap();
    let templates = templates_from_json(
        json!([{"uriTemplate": "test://template/{id}/data", "name": "d", "text": "id {id}",
                "completions": {"id": ["123"]}}]),
        None,
    )
    .unwrap();
    let prompts = prompts_from_json(json!([{"name": "p", "messages": []}]), None).unwrap();
    let catalog = Catalog::new(&resources, &templates, &prompts).unwrap();
    assert!(catalog.resource("test://static-text").is_some());
    assert!(catalog.resource("test://other").is_none());
    let (found, values) = catalog.matching("test://template/7/data").unwrap();
    assert_eq!(found.template.name, "d");
    assert_eq!(values, [("id".to_owned(), "7".to_owned())]);
    assert!(catalog.matching("test://template/7").is_none());
    let twice = [resources[0].clone(), resources[0].clone()];
    assert!(Catalog::new(&twice, &[], &[]).is_err());
    let tasks = resources_from_json(
        json!([{"uri": "agentlog://tasks/x", "name": "t", "text": "x"}]),
        None,
    )
    .unwrap();
    assert!(Catalog::new(&tasks, &[], &[]).is_err());
    let bad_completion = templates_from_json(
        json!([{"uriTemplate": "x://{a}", "name": "a", "text": "", "completions": {"b": []}}]),
        None,
    )
    .unwrap();
    assert!(Catalog::new(&[], &bad_completion, &[]).is_err());
    let bad_template = templates_from_json(
        json!([{"uriTemplate": "x://{+a}", "name": "a", "text": ""}]),
        None,
    )
    .unwrap();
    assert!(Catalog::new(&[], &bad_template, &[]).is_err());
    let prompt_twice = [prompts[0].clone(), prompts[0].clone()];
    assert!(Catalog::new(&[], &[], &prompt_twice).is_err());
}
