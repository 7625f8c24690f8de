//! The SSRF guard: which addresses a fetch the model asked for may reach.
//!
//! A model that reads a page can be told by that page to fetch
//! `http://169.254.169.254/…` (cloud credentials) or a service on the
//! user's network. Every URL is checked before it is requested, every
//! redirect hop again, and every host name after it is resolved (a name
//! may point at a private address; the check runs on the addresses the
//! connection will use, so a second lookup cannot swap them).

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::sync::Arc;

use url::{Host, Url};

/// Why a URL may not be fetched. The message says what the model can do.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum GuardError {
    #[error("only http and https URLs can be fetched, not `{0}:`")]
    Scheme(String),
    #[error("the URL has no host")]
    NoHost,
    #[error(
        "refused: {host} is {kind} address ({ip}); herald does not fetch private, loopback, link-local or metadata addresses unless `[web] allow_private = true` is set"
    )]
    Private {
        host: String,
        ip: IpAddr,
        kind: AddressKind,
    },
    #[error("could not resolve {host}: {reason}")]
    Resolve { host: String, reason: String },
}

/// The kind of address the guard refuses, named in its message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AddressKind {
    Loopback,
    Private,
    LinkLocal,
    Metadata,
    Unspecified,
    SharedCarrier,
    Multicast,
    Reserved,
}

impl std::fmt::Display for AddressKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::Loopback => "a loopback",
            Self::Private => "a private-network",
            Self::LinkLocal => "a link-local",
            Self::Metadata => "a cloud metadata",
            Self::Unspecified => "an unspecified",
            Self::SharedCarrier => "a carrier-grade NAT",
            Self::Multicast => "a multicast",
            Self::Reserved => "a reserved",
        })
    }
}

/// What an address is, when it is one the guard refuses; `None` for a
/// public address.
pub fn classify(ip: IpAddr) -> Option<AddressKind> {
    match ip {
        IpAddr::V4(v4) => classify_v4(v4),
        IpAddr::V6(v6) => {
            if let Some(v4) = v6.to_ipv4_mapped() {
                return classify_v4(v4);
            }
            classify_v6(v6)
        }
    }
}

fn classify_v4(ip: Ipv4Addr) -> Option<AddressKind> {
    let [a, b, ..] = ip.octets();
    if ip == Ipv4Addr::new(169, 254, 169, 254) || ip == Ipv4Addr::new(100, 100, 100, 200) {
        // AWS/GCP/Azure/OpenStack and Alibaba Cloud metadata services.
        Some(AddressKind::Metadata)
    } else if ip.is_loopback() {
        Some(AddressKind::Loopback)
    } else if ip.is_private() {
        Some(AddressKind::Private)
    } else if ip.is_link_local() {
        Some(AddressKind::LinkLocal)
    } else if ip.is_unspecified() || a == 0 {
        Some(AddressKind::Unspecified)
    } else if a == 100 && (64..128).contains(&b) {
        Some(AddressKind::SharedCarrier)
    } else if ip.is_multicast() || ip.is_broadcast() {
        Some(AddressKind::Multicast)
    } else if a >= 240
        || (a == 192 && b == 0 && ip.octets()[2] == 0)
        || (a == 198 && (b & 0xFE) == 18)
    {
        // 240/4, IETF protocol assignments 192.0.0/24, benchmarking 198.18/15.
        Some(AddressKind::Reserved)
    } else {
        None
    }
}

fn classify_v6(ip: Ipv6Addr) -> Option<AddressKind> {
    let first = ip.segments()[0];
    if ip == Ipv6Addr::new(0xfd00, 0xec2, 0, 0, 0, 0, 0, 0x254) {
        Some(AddressKind::Metadata)
    } else if ip.is_loopback() {
        Some(AddressKind::Loopback)
    } else if ip.is_unspecified() {
        Some(AddressKind::Unspecified)
    } else if (first & 0xfe00) == 0xfc00 {
        // Unique local addresses, fc00::/7.
        Some(AddressKind::Private)
    } else if (first & 0xffc0) == 0xfe80 {
        Some(AddressKind::LinkLocal)
    } else if ip.is_multicast() {
        Some(AddressKind::Multicast)
    } else if let Some(v4) = ip.to_ipv4() {
        // IPv4-compatible (::a.b.c.d) and NAT64 spellings of a private v4.
        classify_v4(v4)
    } else {
        None
    }
}

/// The address rules of one session's web tools.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AddressPolicy {
    /// `[web] allow_private`: the user lets the tools reach local and
    /// private addresses (a documentation server on the LAN).
    pub allow_private: bool,
    /// `[web] allow_hosts`: names or addresses reachable although private
    /// (one intranet host, without opening the whole network).
    pub allow_hosts: Arc<[String]>,
}

impl AddressPolicy {
    /// The default policy plus `allow_hosts` (lowercased).
    pub fn new(allow_private: bool, allow_hosts: &[String]) -> Self {
        Self {
            allow_private,
            allow_hosts: allow_hosts
                .iter()
                .map(|h| h.trim().trim_end_matches('.').to_ascii_lowercase())
                .collect(),
        }
    }

    fn host_allowed(&self, host: &str) -> bool {
        let host = host.trim_end_matches('.');
        self.allow_hosts
            .iter()
            .any(|h| h.eq_ignore_ascii_case(host))
    }

    /// Refuses `ip` (reached as `host`) unless private addresses are allowed.
    pub fn check_ip(&self, host: &str, ip: IpAddr) -> Result<(), GuardError> {
        if self.allow_private || self.host_allowed(host) {
            return Ok(());
        }
        match classify(ip) {
            Some(kind) => Err(GuardError::Private {
                host: host.to_owned(),
                ip,
                kind,
            }),
            None => Ok(()),
        }
    }

    /// Checks what can be checked without a lookup: the scheme, and the
    /// host when it is an address literal. Names are checked by
    /// [`GuardedResolver`] when the connection resolves them.
    pub fn check_url(&self, url: &Url) -> Result<(), GuardError> {
        match url.scheme() {
            "http" | "https" => {}
            other => return Err(GuardError::Scheme(other.to_owned())),
        }
        match url.host() {
            None => Err(GuardError::NoHost),
            Some(Host::Ipv4(ip)) => self.check_ip(&ip.to_string(), IpAddr::V4(ip)),
            Some(Host::Ipv6(ip)) => self.check_ip(&ip.to_string(), IpAddr::V6(ip)),
            Some(Host::Domain(name)) => {
                // `localhost` and its subdomains never need a lookup to
                // know where they go.
                let name = name.trim_end_matches('.').to_ascii_lowercase();
                if name == "localhost" || name.ends_with(".localhost") {
                    self.check_ip(&name, IpAddr::V4(Ipv4Addr::LOCALHOST))
                } else {
                    Ok(())
                }
            }
        }
    }

    /// Resolves `host` and keeps only the addresses the policy allows;
    /// refuses when none is left. Used by the HTTP client's resolver and
    /// by callers that must check a name before handing it to another
    /// program (the browser).
    pub async fn resolve(&self, host: &str, port: u16) -> Result<Vec<SocketAddr>, GuardError> {
        let found: Vec<SocketAddr> = tokio::net::lookup_host((host, port))
            .await
            .map_err(|err| GuardError::Resolve {
                host: host.to_owned(),
                reason: err.to_string(),
            })?
            .collect();
        let mut refused = None;
        let allowed: Vec<SocketAddr> = found
            .into_iter()
            .filter(|addr| match self.check_ip(host, addr.ip()) {
                Ok(()) => true,
                Err(err) => {
                    refused.get_or_insert(err);
                    false
                }
            })
            .collect();
        match (allowed.is_empty(), refused) {
            (false, _) => Ok(allowed),
            (true, Some(err)) => Err(err),
            (true, None) => Err(GuardError::Resolve {
                host: host.to_owned(),
                reason: "no addresses".to_owned(),
            }),
        }
    }

    /// Checks a URL completely: scheme, literal host, and every address
    /// its name resolves to (for a caller that does not connect itself).
    pub async fn check_url_resolved(&self, url: &Url) -> Result<(), GuardError> {
        self.check_url(url)?;
        if self.allow_private {
            return Ok(());
        }
        if let Some(Host::Domain(name)) = url.host() {
            let port = url.port_or_known_default().unwrap_or(80);
            self.resolve(name, port).await?;
        }
        Ok(())
    }
}

/// A resolver for reqwest that drops refused addresses, so a name that
/// resolves to a private address fails to connect with the guard's
/// message, also when it is reached through a redirect.
#[derive(Debug, Clone)]
pub struct GuardedResolver {
    policy: AddressPolicy,
}

impl GuardedResolver {
    /// A resolver applying `policy`.
    pub fn new(policy: AddressPolicy) -> Arc<Self> {
        Arc::new(Self { policy })
    }
}

impl reqwest::dns::Resolve for GuardedResolver {
    fn resolve(&self, name: reqwest::dns::Name) -> reqwest::dns::Resolving {
        let policy = self.policy.clone();
        Box::pin(async move {
            let addrs = policy.resolve(name.as_str(), 0).await?;
            let addrs: reqwest::dns::Addrs = Box::new(addrs.into_iter());
            Ok(addrs)
        })
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn kind(text: &str) -> Option<AddressKind> {
        classify(text.parse().unwrap())
    }

    #[test]
    fn private_and_special_addresses_are_classified() {
        assert_eq!(kind("127.0.0.1"), Some(AddressKind::Loopback));
        assert_eq!(kind("127.9.9.9"), Some(AddressKind::Loopback));
        assert_eq!(kind("10.1.2.3"), Some(AddressKind::Private));
        assert_eq!(kind("172.16.0.1"), Some(AddressKind::Private));
        assert_eq!(kind("172.31.255.255"), Some(AddressKind::Private));
        assert_eq!(kind("192.168.1.1"), Some(AddressKind::Private));
        assert_eq!(kind("169.254.169.254"), Some(AddressKind::Metadata));
        assert_eq!(kind("169.254.1.1"), Some(AddressKind::LinkLocal));
        assert_eq!(kind("0.0.0.0"), Some(AddressKind::Unspecified));
        assert_eq!(kind("100.64.0.1"), Some(AddressKind::SharedCarrier));
        assert_eq!(kind("224.0.0.1"), Some(AddressKind::Multicast));
        assert_eq!(kind("::1"), Some(AddressKind::Loopback));
        assert_eq!(kind("fe80::1"), Some(AddressKind::LinkLocal));
        assert_eq!(kind("fd12::1"), Some(AddressKind::Private));
        assert_eq!(kind("fd00:ec2::254"), Some(AddressKind::Metadata));
        assert_eq!(kind("::ffff:127.0.0.1"), Some(AddressKind::Loopback));
        assert_eq!(kind("::ffff:169.254.169.254"), Some(AddressKind::Metadata));
    }

    #[test]
    fn public_addresses_pass() {
        for ip in [
            "93.184.216.34",
            "8.8.8.8",
            "172.32.0.1",
            "100.128.0.1",
            "2606:4700::1111",
        ] {
            assert_eq!(kind(ip), None, "{ip}");
        }
    }

    #[test]
    fn literal_hosts_and_schemes_are_checked_before_any_request() {
        let policy = AddressPolicy::default();
        let check = |u: &str| policy.check_url(&Url::parse(u).unwrap());
        assert!(matches!(
            check("http://127.0.0.1:8080/x"),
            Err(GuardError::Private {
                kind: AddressKind::Loopback,
                ..
            })
        ));
        assert!(matches!(
            check("http://[::1]/"),
            Err(GuardError::Private { .. })
        ));
        assert!(matches!(
            check("http://localhost:3000/"),
            Err(GuardError::Private { .. })
        ));
        assert!(matches!(
            check("file:///etc/passwd"),
            Err(GuardError::Scheme(_))
        ));
        assert!(check("https://docs.rs/tokio").is_ok());
        let open = AddressPolicy::new(true, &[]);
        assert!(
            open.check_url(&Url::parse("http://127.0.0.1/").unwrap())
                .is_ok()
        );
        let one = AddressPolicy::new(
            false,
            &["127.0.0.1".to_owned(), "Docs.Internal.".to_owned()],
        );
        assert!(
            one.check_url(&Url::parse("http://127.0.0.1:9/").unwrap())
                .is_ok()
        );
        assert!(
            one.check_url(&Url::parse("http://127.0.0.2:9/").unwrap())
                .is_err()
        );
        assert!(
            one.check_ip("docs.internal", "10.0.0.5".parse().unwrap())
                .is_ok()
        );
        assert!(
            one.check_ip("other.internal", "10.0.0.5".parse().unwrap())
                .is_err()
        );
    }

    #[tokio::test]
    async fn a_name_resolving_to_loopback_is_refused_unless_allowed() {
        let policy = AddressPolicy::default();
        let err = policy
            .check_url_resolved(&Url::parse("http://localhost.:1/").unwrap())
            .await
            .unwrap_err();
        assert!(err.to_string().contains("loopback"), "{err}");
        // `localhost` resolves through /etc/hosts without a network.
        let err = policy.resolve("localhost", 80).await.unwrap_err();
        assert!(matches!(err, GuardError::Private { .. }), "{err}");
        let open = AddressPolicy::new(true, &[]);
        assert!(!open.resolve("localhost", 80).await.unwrap().is_empty());
    }
}
