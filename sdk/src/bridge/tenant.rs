//! The tenant a request names: its `tenant` field (every A2A request has one; the HTTP+JSON
//! binding's `/{tenant}/…` paths fill it). An anonymous caller works in the tenant it names,
//! which partitions task ids exactly as an authenticated caller's tenant does; an
//! authenticated caller may name only its own (its token's tenant claim), anything else is
//! refused as forbidden. Naming none, or the empty one, keeps the caller's.

use std::borrow::Cow;

use crate::agent::Caller;
use crate::error::{Error, ErrorKind, Result};

/// `caller` in the tenant `named`, or why it may not be.
pub(super) fn scoped<'c>(caller: &'c Caller, named: Option<&str>) -> Result<Cow<'c, Caller>> {
    match named.filter(|tenant| !tenant.is_empty()) {
        None => Ok(Cow::Borrowed(caller)),
        Some(tenant) if tenant == caller.tenant => Ok(Cow::Borrowed(caller)),
        Some(tenant) if caller.principal.is_empty() && caller.tenant.is_empty() => {
            Ok(Cow::Owned(caller.clone().in_tenant(tenant)))
        }
        Some(tenant) => Err(Error::new(
            ErrorKind::PermissionDenied,
            format!("the request names tenant {tenant:?}, which is not the caller's"),
        )
        .with_detail("tenant", tenant)),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn anonymous_callers_take_the_named_tenant_and_others_keep_theirs() {
        let anonymous = Caller::anonymous();
        assert_eq!(scoped(&anonymous, Some("acme")).unwrap().tenant, "acme");
        assert_eq!(scoped(&anonymous, Some("")).unwrap().tenant, "");
        assert_eq!(scoped(&anonymous, None).unwrap().tenant, "");
        let alice = Caller::principal("alice").in_tenant("acme");
        assert_eq!(scoped(&alice, Some("acme")).unwrap().tenant, "acme");
        assert_eq!(scoped(&alice, None).unwrap().tenant, "acme");
        let refused = scoped(&alice, Some("globex")).unwrap_err();
        assert_eq!(refused.kind(), ErrorKind::PermissionDenied);
        // No tenant claim is the default tenant: naming another is refused too.
        let bob = Caller::principal("bob");
        assert!(scoped(&bob, Some("acme")).is_err());
    }
}
