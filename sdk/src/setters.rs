//! `setters!`: the setters of a config, named after its fields (async-nats's
//! `ConnectOptions` shape): `BridgeConfig::new(agent).retention(d).max_hops(4)`. A field
//! listed under `optional` holds an `Option`; its setter takes the value.

macro_rules! setters {
    (
        $ty:ty {
            $($field:ident: $t:ty),* $(,)?
        }
        $(optional {
            $($ofield:ident: $ot:ty),* $(,)?
        })?
    ) => {
        impl $ty {
            $(
                #[doc = concat!("Sets the `", stringify!($field), "` field.")]
                #[must_use]
                pub fn $field(mut self, $field: $t) -> Self {
                    self.$field = $field;
                    self
                }
            )*
            $($(
                #[doc = concat!("Sets the `", stringify!($ofield), "` field (to `Some`).")]
                #[must_use]
                pub fn $ofield(mut self, $ofield: $ot) -> Self {
                    self.$ofield = Some($ofield);
                    self
                }
            )*)?
        }
    };
}
