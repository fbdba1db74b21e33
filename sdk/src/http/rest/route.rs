//! Which HTTP+JSON route a request names (A2A §11.3): the path after the base, with or
//! without a leading `/{tenant}` segment. axum matches no `:cancel` inside a segment, so the
//! task segment is taken whole and its `:cancel` / `:subscribe` suffix split off here, as the
//! a2a-rs and a2a-go servers do.

use axum::http::Method;
use percent_encoding::percent_decode_str;

/// An operation of the binding, with the ids its path carries.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(in crate::http) enum Route {
    /// `POST /message:send`.
    Send,
    /// `POST /message:stream`.
    Stream,
    /// `GET /tasks`.
    ListTasks,
    /// `GET /tasks/{id}`.
    GetTask(String),
    /// `POST /tasks/{id}:cancel`.
    Cancel(String),
    /// `GET` or `POST /tasks/{id}:subscribe`.
    Subscribe(String),
    /// `POST /tasks/{id}/pushNotificationConfigs`.
    CreatePushConfig(String),
    /// `GET /tasks/{id}/pushNotificationConfigs`.
    ListPushConfigs(String),
    /// `GET /tasks/{id}/pushNotificationConfigs/{configId}`.
    GetPushConfig(String, String),
    /// `DELETE /tasks/{id}/pushNotificationConfigs/{configId}`.
    DeletePushConfig(String, String),
    /// `GET /extendedAgentCard`.
    ExtendedCard,
}

impl Route {
    /// The JSON-RPC method the route is.
    pub(super) fn method(&self) -> &'static str {
        match self {
            Route::Send => "SendMessage",
            Route::Stream => "SendStreamingMessage",
            Route::ListTasks => "ListTasks",
            Route::GetTask(_) => "GetTask",
            Route::Cancel(_) => "CancelTask",
            Route::Subscribe(_) => "SubscribeToTask",
            Route::CreatePushConfig(_) => "CreateTaskPushNotificationConfig",
            Route::ListPushConfigs(_) => "ListTaskPushNotificationConfigs",
            Route::GetPushConfig(..) => "GetTaskPushNotificationConfig",
            Route::DeletePushConfig(..) => "DeleteTaskPushNotificationConfig",
            Route::ExtendedCard => "GetExtendedAgentCard",
        }
    }

    /// Whether the request may carry a body the route reads.
    pub(super) fn takes_body(&self) -> bool {
        matches!(
            self,
            Route::Send | Route::Stream | Route::Cancel(_) | Route::CreatePushConfig(_)
        )
    }
}

/// What a path names: a route (with the tenant of a `/{tenant}/…` path), a path of the
/// binding asked with a method it does not serve (the methods it does), or nothing.
#[derive(Debug, PartialEq, Eq)]
pub(in crate::http) enum Matched {
    Route {
        tenant: Option<String>,
        route: Route,
    },
    WrongMethod(&'static str),
    None,
}

/// The route `method` and `path` (relative to the binding's base, without its query) name.
pub(in crate::http) fn route(method: &Method, path: &str) -> Matched {
    let segments: Vec<&str> = path.trim_start_matches('/').split('/').collect();
    match of_segments(method, &segments) {
        Matched::None if segments.len() > 1 && !segments[0].is_empty() => {
            match of_segments(method, &segments[1..]) {
                Matched::Route { route, .. } => Matched::Route {
                    tenant: Some(decode(segments[0])),
                    route,
                },
                other => other,
            }
        }
        matched => matched,
    }
}

fn of_segments(method: &Method, segments: &[&str]) -> Matched {
    let only = |allowed: &Method, allow: &'static str, route: Route| {
        if method == allowed {
            Matched::Route {
                tenant: None,
                route,
            }
        } else {
            Matched::WrongMethod(allow)
        }
    };
    match segments {
        ["message:send"] => only(&Method::POST, "POST", Route::Send),
        ["message:stream"] => only(&Method::POST, "POST", Route::Stream),
        ["extendedAgentCard"] => only(&Method::GET, "GET", Route::ExtendedCard),
        ["tasks"] => only(&Method::GET, "GET", Route::ListTasks),
        ["tasks", task] if !task.is_empty() => {
            if let Some(id) = task.strip_suffix(":cancel") {
                only(&Method::POST, "POST", Route::Cancel(decode(id)))
            } else if let Some(id) = task.strip_suffix(":subscribe") {
                // The proto says GET; clients (and the conformance kit) POST.
                if method == Method::GET || method == Method::POST {
                    Matched::Route {
                        tenant: None,
                        route: Route::Subscribe(decode(id)),
                    }
                } else {
                    Matched::WrongMethod("GET, POST")
                }
            } else {
                only(&Method::GET, "GET", Route::GetTask(decode(task)))
            }
        }
        ["tasks", task, "pushNotificationConfigs"] => match *method {
            Method::POST => Matched::Route {
                tenant: None,
                route: Route::CreatePushConfig(decode(task)),
            },
            Method::GET => Matched::Route {
                tenant: None,
                route: Route::ListPushConfigs(decode(task)),
            },
            _ => Matched::WrongMethod("GET, POST"),
        },
        ["tasks", task, "pushNotificationConfigs", config] => match *method {
            Method::GET => Matched::Route {
                tenant: None,
                route: Route::GetPushConfig(decode(task), decode(config)),
            },
            Method::DELETE => Matched::Route {
                tenant: None,
                route: Route::DeletePushConfig(decode(task), decode(config)),
            },
            _ => Matched::WrongMethod("GET, DELETE"),
        },
        _ => Matched::None,
    }
}

/// A path segment with its percent-escapes decoded (a task id may hold any character).
fn decode(segment: &str) -> String {
    percent_decode_str(segment).decode_utf8_lossy().into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn routed(method: Method, path: &str) -> Matched {
        route(&method, path)
    }

    fn plain(route: Route) -> Matched {
        Matched::Route {
            tenant: None,
            route,
        }
    }

    #[test]
    fn every_route_of_the_binding_is_found_with_its_ids() {
        let id = || "t-1".to_owned();
        let cases = [
            (Method::POST, "/message:send", plain(Route::Send)),
            (Method::POST, "/message:stream", plain(Route::Stream)),
            (Method::GET, "/tasks", plain(Route::ListTasks)),
            (Method::GET, "/tasks/t-1", plain(Route::GetTask(id()))),
            (
                Method::POST,
                "/tasks/t-1:cancel",
                plain(Route::Cancel(id())),
            ),
            (
                Method::POST,
                "/tasks/t-1:subscribe",
                plain(Route::Subscribe(id())),
            ),
            (
                Method::GET,
                "/tasks/t-1:subscribe",
                plain(Route::Subscribe(id())),
            ),
            (
                Method::POST,
                "/tasks/t-1/pushNotificationConfigs",
                plain(Route::CreatePushConfig(id())),
            ),
            (
                Method::GET,
                "/tasks/t-1/pushNotificationConfigs",
                plain(Route::ListPushConfigs(id())),
            ),
            (
                Method::GET,
                "/tasks/t-1/pushNotificationConfigs/c",
                plain(Route::GetPushConfig(id(), "c".into())),
            ),
            (
                Method::DELETE,
                "/tasks/t-1/pushNotificationConfigs/c",
                plain(Route::DeletePushConfig(id(), "c".into())),
            ),
            (
                Method::GET,
                "/extendedAgentCard",
                plain(Route::ExtendedCard),
            ),
        ];
        for (method, path, expected) in cases {
            assert_eq!(routed(method.clone(), path), expected, "{method} {path}");
            let tenanted = routed(method.clone(), &format!("/acme{path}"));
            let Matched::Route { tenant, .. } = tenanted else {
                panic!("{method} /acme{path}: {tenanted:?}");
            };
            assert_eq!(tenant.as_deref(), Some("acme"));
        }
    }

    #[test]
    fn ids_are_decoded_and_other_paths_and_methods_are_not_routes() {
        assert_eq!(
            routed(Method::GET, "/tasks/a%2Fb%3Acancel"),
            plain(Route::GetTask("a/b:cancel".into()))
        );
        assert_eq!(
            routed(Method::POST, "/ten%20ant/message:send"),
            Matched::Route {
                tenant: Some("ten ant".into()),
                route: Route::Send
            }
        );
        assert_eq!(
            routed(Method::GET, "/message:send"),
            Matched::WrongMethod("POST")
        );
        assert_eq!(
            routed(Method::DELETE, "/tasks/t:subscribe"),
            Matched::WrongMethod("GET, POST")
        );
        assert_eq!(routed(Method::GET, "/tasks/"), Matched::None);
        assert_eq!(routed(Method::GET, "/healthz"), Matched::None);
        assert_eq!(routed(Method::POST, "/"), Matched::None);
        assert_eq!(routed(Method::GET, "/a/b/tasks"), Matched::None);
    }
}
