//! The push-config methods through the bridge's one entry, as every binding calls them.

#![allow(clippy::unwrap_used)]

use std::time::Duration;

use serde_json::{Value, json};

use crate::Caller;
use crate::bridge::{Bridge, BridgeConfig, RpcReply, RpcRequest};
use crate::log::Log;
use crate::security::Destinations;

async fn bridge_on(log: &Log, push: bool) -> Bridge {
    let mut config = BridgeConfig::new("pushy").retention(Duration::from_millis(300));
    if push {
        config = config.push(Destinations::new());
    }
    Bridge::open(log.clone(), config).await.unwrap()
}

/// A JSON-RPC call's `result`, or its error's code.
async fn call(bridge: &Bridge, caller: &Caller, method: &str, params: Value) -> Result<Value, i64> {
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}).to_string();
    let RpcReply::Json(bytes) = bridge
        .handle(RpcRequest::new(body.as_bytes(), caller.clone()))
        .await
    else {
        panic!("{method}: not a JSON answer");
    };
    let reply: Value = serde_json::from_slice(&bytes).unwrap();
    match reply.get("error") {
        Some(error) => Err(error["code"].as_i64().unwrap()),
        None => Ok(reply["result"].clone()),
    }
}

/// A task of `caller`, submitted (nobody works on it here); its id.
async fn task(bridge: &Bridge, caller: &Caller, message_id: &str, configuration: Value) -> String {
    let mut configuration = configuration;
    configuration["returnImmediately"] = json!(true);
    let params = json!({
        "message": {"messageId": message_id, "role": "ROLE_USER", "parts": [{"text": "hi"}]},
        "configuration": configuration,
    });
    let result = call(bridge, caller, "SendMessage", params).await.unwrap();
    result["task"]["id"].as_str().unwrap().to_owned()
}

fn hook(id: &str) -> Value {
    json!({"id": id, "url": "https://example.com/hook", "token": "tok",
           "authentication": {"scheme": "Bearer", "credentials": "secret"}})
}

#[tokio::test]
async fn without_a_sender_every_method_answers_push_not_supported() {
    let log = crate::log::open("memory://").await.unwrap();
    let bridge = bridge_on(&log, false).await;
    assert_eq!(
        bridge.agent_card().capabilities.push_notifications,
        Some(false)
    );
    let me = Caller::anonymous();
    let id = task(&bridge, &me, "m-1", json!({})).await;
    let mut create = hook("p");
    create["taskId"] = json!(id);
    for (method, params) in [
        ("CreateTaskPushNotificationConfig", create),
        (
            "GetTaskPushNotificationConfig",
            json!({"taskId": id, "id": "p"}),
        ),
        ("ListTaskPushNotificationConfigs", json!({"taskId": id})),
        (
            "DeleteTaskPushNotificationConfig",
            json!({"taskId": id, "id": "p"}),
        ),
        ("tasks/pushNotificationConfig/list", json!({"id": id})),
    ] {
        assert_eq!(
            call(&bridge, &me, method, params).await,
            Err(-32003),
            "{method}"
        );
    }
}

#[tokio::test]
async fn configs_are_created_read_listed_and_deleted_idempotently_without_their_credentials() {
    let log = crate::log::open("memory://").await.unwrap();
    let bridge = bridge_on(&log, true).await;
    assert_eq!(
        bridge.agent_card().capabilities.push_notifications,
        Some(true)
    );
    let me = Caller::anonymous();
    let id = task(&bridge, &me, "m-1", json!({})).await;
    let mut a = hook("a");
    a["taskId"] = json!(id);
    let created = call(&bridge, &me, "CreateTaskPushNotificationConfig", a)
        .await
        .unwrap();
    let shown = json!({"id": "a", "taskId": id, "url": "https://example.com/hook", "token": "tok",
                       "authentication": {"scheme": "Bearer"}});
    assert_eq!(created, shown);
    let got = call(
        &bridge,
        &me,
        "GetTaskPushNotificationConfig",
        json!({"task_id": id, "id": "a"}),
    )
    .await
    .unwrap();
    assert_eq!(got, shown);
    // No id: one is assigned.
    let unnamed = json!({"taskId": id, "url": "https://example.com/other"});
    let second = call(&bridge, &me, "CreateTaskPushNotificationConfig", unnamed)
        .await
        .unwrap();
    let second_id = second["id"].as_str().unwrap().to_owned();
    assert!(uuid::Uuid::parse_str(&second_id).is_ok());
    let list = call(
        &bridge,
        &me,
        "ListTaskPushNotificationConfigs",
        json!({"taskId": id}),
    )
    .await
    .unwrap();
    assert_eq!(list["configs"].as_array().unwrap().len(), 2);
    assert_eq!(list["nextPageToken"], "");
    let page = call(
        &bridge,
        &me,
        "ListTaskPushNotificationConfigs",
        json!({"taskId": id, "pageSize": 1}),
    )
    .await
    .unwrap();
    assert_eq!(
        (
            page["configs"][0]["id"].as_str(),
            page["nextPageToken"].as_str()
        ),
        (Some("a"), Some("1"))
    );
    let rest = call(
        &bridge,
        &me,
        "ListTaskPushNotificationConfigs",
        json!({"taskId": id, "pageSize": 1, "pageToken": "1"}),
    )
    .await
    .unwrap();
    assert_eq!(
        (
            rest["configs"][0]["id"].as_str(),
            rest["nextPageToken"].as_str()
        ),
        (Some(second_id.as_str()), Some(""))
    );
    for _ in 0..2 {
        let deleted = call(
            &bridge,
            &me,
            "DeleteTaskPushNotificationConfig",
            json!({"taskId": id, "id": "a"}),
        )
        .await
        .unwrap();
        assert_eq!(deleted, json!({}));
    }
    assert_eq!(
        call(
            &bridge,
            &me,
            "GetTaskPushNotificationConfig",
            json!({"taskId": id, "id": "a"})
        )
        .await,
        Err(-32001)
    );
    // Every replica, and a bridge started later, reads the same configs from the log.
    let other = bridge_on(&log, true).await;
    let list = call(
        &other,
        &me,
        "ListTaskPushNotificationConfigs",
        json!({"taskId": id}),
    )
    .await
    .unwrap();
    assert_eq!(list["configs"].as_array().unwrap().len(), 1);
    assert_eq!(list["configs"][0]["id"], second_id.as_str());
}

#[tokio::test]
async fn another_callers_or_tenants_task_and_unknown_tasks_are_not_found() {
    let log = crate::log::open("memory://").await.unwrap();
    let bridge = bridge_on(&log, true).await;
    let alice = Caller::principal("alice");
    let id = task(&bridge, &alice, "m-1", json!({})).await;
    let mut a = hook("a");
    a["taskId"] = json!(id);
    call(
        &bridge,
        &alice,
        "CreateTaskPushNotificationConfig",
        a.clone(),
    )
    .await
    .unwrap();
    for caller in [
        Caller::principal("bob"),
        Caller::principal("alice").in_tenant("other"),
    ] {
        assert_eq!(
            call(
                &bridge,
                &caller,
                "CreateTaskPushNotificationConfig",
                a.clone()
            )
            .await,
            Err(-32001)
        );
        assert_eq!(
            call(
                &bridge,
                &caller,
                "GetTaskPushNotificationConfig",
                json!({"taskId": id, "id": "a"})
            )
            .await,
            Err(-32001)
        );
        assert_eq!(
            call(
                &bridge,
                &caller,
                "ListTaskPushNotificationConfigs",
                json!({"taskId": id})
            )
            .await,
            Err(-32001)
        );
        assert_eq!(
            call(
                &bridge,
                &caller,
                "DeleteTaskPushNotificationConfig",
                json!({"taskId": id, "id": "a"})
            )
            .await,
            Err(-32001)
        );
    }
    assert_eq!(
        call(
            &bridge,
            &alice,
            "DeleteTaskPushNotificationConfig",
            json!({"taskId": "nope", "id": "a"})
        )
        .await,
        Err(-32001)
    );
    // Alice's config is untouched.
    let got = call(
        &bridge,
        &alice,
        "GetTaskPushNotificationConfig",
        json!({"taskId": id, "id": "a"}),
    )
    .await;
    assert!(got.is_ok());
}

#[tokio::test]
async fn bad_configs_are_invalid_params_and_nothing_is_written() {
    let log = crate::log::open("memory://").await.unwrap();
    let bridge = bridge_on(&log, true).await;
    let me = Caller::anonymous();
    let id = task(&bridge, &me, "m-1", json!({})).await;
    let events = bridge.config().topics.events.clone();
    let before = crate::bridge::test_support::records_on(&log, &events).await;
    for config in [
        json!({"taskId": id, "url": "ftp://example.com/x"}),
        json!({"taskId": id, "url": "http://127.0.0.1:9/hook"}),
        json!({"taskId": id, "url": "http://169.254.169.254/latest"}),
        json!({"taskId": id, "url": "https://example.com/h", "token": "a\r\nX-Evil: 1"}),
        json!({"taskId": id, "url": "https://example.com/h", "authentication": {"scheme": "Bearer x"}}),
        json!({"url": "https://example.com/h"}),
        json!({"taskId": id}),
    ] {
        assert_eq!(
            call(
                &bridge,
                &me,
                "CreateTaskPushNotificationConfig",
                config.clone()
            )
            .await,
            Err(-32602),
            "{config}"
        );
    }
    // A send whose inline config is refused writes nothing either.
    let params = json!({
        "message": {"messageId": "m-2", "role": "ROLE_USER", "parts": [{"text": "hi"}]},
        "configuration": {"taskPushNotificationConfig": {"url": "http://10.0.0.1/x"}},
    });
    assert_eq!(call(&bridge, &me, "SendMessage", params).await, Err(-32602));
    assert_eq!(
        crate::bridge::test_support::records_on(&log, &events).await,
        before
    );
}

#[tokio::test]
async fn an_inline_config_is_the_tasks_and_the_0_3_names_serve_the_same_configs() {
    let log = crate::log::open("memory://").await.unwrap();
    let bridge = bridge_on(&log, true).await;
    let me = Caller::anonymous();
    let inline =
        json!({"taskPushNotificationConfig": {"url": "https://example.com/in", "token": "t"}});
    let id = task(&bridge, &me, "m-1", inline).await;
    assert!(bridge.view().has_push_configs(&id));
    let list = call(
        &bridge,
        &me,
        "ListTaskPushNotificationConfigs",
        json!({"taskId": id}),
    )
    .await
    .unwrap();
    assert_eq!(
        list["configs"],
        json!([{"id": id, "taskId": id, "url": "https://example.com/in", "token": "t"}])
    );
    // 0.3: the config nested, the task named `id`, a config without an id the task's own.
    let set = json!({"taskId": id, "pushNotificationConfig": {"id": "b", "url": "https://example.com/b",
                     "authentication": {"schemes": ["Basic"], "credentials": "dTpw"}}});
    let created = call(&bridge, &me, "tasks/pushNotificationConfig/set", set)
        .await
        .unwrap();
    assert_eq!(
        created,
        json!({"taskId": id, "pushNotificationConfig": {"id": "b", "url": "https://example.com/b",
               "authentication": {"schemes": ["Basic"]}}})
    );
    let got = call(
        &bridge,
        &me,
        "tasks/pushNotificationConfig/get",
        json!({"id": id}),
    )
    .await
    .unwrap();
    assert_eq!(got["pushNotificationConfig"]["id"], id.as_str());
    let listed = call(
        &bridge,
        &me,
        "tasks/pushNotificationConfig/list",
        json!({"id": id}),
    )
    .await
    .unwrap();
    assert_eq!(listed.as_array().unwrap().len(), 2);
    let deleted = call(
        &bridge,
        &me,
        "tasks/pushNotificationConfig/delete",
        json!({"id": id, "pushNotificationConfigId": "b"}),
    )
    .await
    .unwrap();
    assert_eq!(deleted, Value::Null);
}

#[tokio::test]
async fn configs_live_and_expire_with_their_task() {
    let log = crate::log::open("memory://").await.unwrap();
    let bridge = bridge_on(&log, true).await;
    let me = Caller::anonymous();
    let id = task(&bridge, &me, "m-1", json!({})).await;
    call(&bridge, &me, "CancelTask", json!({"id": id}))
        .await
        .unwrap();
    // A finished task takes configs until it expires (a late receiver gets its end).
    let mut a = hook("a");
    a["taskId"] = json!(id);
    call(&bridge, &me, "CreateTaskPushNotificationConfig", a.clone())
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(400)).await;
    assert_eq!(
        call(
            &bridge,
            &me,
            "ListTaskPushNotificationConfigs",
            json!({"taskId": id})
        )
        .await,
        Err(-32001)
    );
    assert_eq!(
        call(&bridge, &me, "CreateTaskPushNotificationConfig", a).await,
        Err(-32001)
    );
}
