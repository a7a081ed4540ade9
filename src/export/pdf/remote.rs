//! Remote content for a PDF rendered with remote content allowed (`?remote=1`): fetched by
//! mailshelf for Chromium, which itself resolves and reaches nothing (see [`super::cdp`]).
//!
//! The render runs on the server, so a message must not make the server fetch from where the
//! server stands (server-side request forgery). Fetching here rather than letting Chromium go out
//! means the address checked is the address connected to: a host name is resolved once, by
//! [`PublicOnly`], and only its public addresses that are not this machine's own are dialled (a
//! name that resolves differently for a second lookup, DNS rebinding, has no second lookup to
//! win). Each redirect is checked the same way. What comes back is bounded in size and time.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::Semaphore;

use reqwest::dns::{Addrs, Name, Resolve, Resolving};

use super::cdp::Fetched;

/// The largest resource taken from outside: a picture or a style sheet of a mail.
const MAX_REMOTE_BYTES: usize = 16 * 1024 * 1024;
/// Time for one resource, its redirects included (the render as a whole has its own bound).
const REMOTE_TIMEOUT: Duration = Duration::from_secs(15);
/// Redirects followed for one resource.
const MAX_REDIRECTS: usize = 5;
/// Resources fetched at once for one render: what a browser opens to one host.
const AT_ONCE: usize = 6;
/// Everything taken from outside for one render: past it, further resources are not had.
const MAX_RENDER_BYTES: usize = 64 * 1024 * 1024;
/// The header fields of the browser's own request passed on with a fetch, so that a site answers
/// as it would have answered the browser (the kind of picture it takes, a page some sites refuse
/// without a browser's name). Nothing else is: no cookie, no referrer.
const PASSED_ON: [&str; 3] = ["accept", "accept-language", "user-agent"];

/// Which addresses a fetch may dial.
#[derive(Clone)]
enum Reach {
    /// Public addresses, none of this machine's own (listed once for a render).
    Public(Arc<[IpAddr]>),
    /// Any (the tests' stand-in servers are on loopback).
    #[cfg(test)]
    Anything,
}

impl Reach {
    fn allows(&self, ip: IpAddr) -> bool {
        match self {
            Reach::Public(own) => reachable(ip, own),
            #[cfg(test)]
            Reach::Anything => true,
        }
    }
}

/// Fetches remote resources for one render: up to [`AT_ONCE`] at a time, [`MAX_RENDER_BYTES`] in
/// all.
pub(crate) struct Remote {
    client: reqwest::Client,
    reach: Reach,
    at_once: Semaphore,
    /// Bytes taken so far, by every resource of the render.
    taken: AtomicUsize,
}

impl Remote {
    /// A fetcher that reaches only public addresses other than this machine's own.
    pub(crate) fn new() -> Option<Remote> {
        Remote::reaching(Reach::Public(own_addresses().into()))
    }

    /// A fetcher that reaches anything, for the tests' stand-in servers on loopback.
    #[cfg(test)]
    pub(crate) fn anywhere() -> Option<Remote> {
        Remote::reaching(Reach::Anything)
    }

    fn reaching(reach: Reach) -> Option<Remote> {
        let (for_names, for_redirects) = (reach.clone(), reach.clone());
        let client = reqwest::Client::builder()
            .dns_resolver(Arc::new(PublicOnly { reach: for_names }))
            .redirect(reqwest::redirect::Policy::custom(move |attempt| {
                if attempt.previous().len() >= MAX_REDIRECTS {
                    attempt.error("too many redirects")
                } else if may_go_out(attempt.url().as_str(), &for_redirects) {
                    attempt.follow()
                } else {
                    attempt.stop()
                }
            }))
            .timeout(REMOTE_TIMEOUT)
            .no_proxy()
            .build()
            .map_err(|e| tracing::warn!(error = %e, "no client for remote content"))
            .ok()?;
        Some(Remote { client, reach, at_once: Semaphore::new(AT_ONCE), taken: AtomicUsize::new(0) })
    }

    /// The resource at `url`, asked for with those of the browser's header `fields` that are
    /// passed on ([`PASSED_ON`]); `None` when it cannot be had within the bounds (refused,
    /// unreachable, too large, too slow, past the render's share).
    pub(crate) async fn fetch(&self, url: &str, fields: &[(String, String)]) -> Option<Fetched> {
        if !may_go_out(url, &self.reach) {
            return None;
        }
        let mut request = self.client.get(url);
        for (name, value) in fields.iter().filter(|(name, _)| PASSED_ON.iter().any(|p| name.eq_ignore_ascii_case(p))) {
            request = request.header(name.as_str(), value.as_str());
        }
        let _turn = self.at_once.acquire().await.ok()?;
        let mut response = request.send().await.ok()?;
        if response.content_length().is_some_and(|n| n > MAX_REMOTE_BYTES as u64) {
            return None;
        }
        let status = response.status().as_u16();
        let headers = Fetched::fields_of(response.headers());
        let mut body = Vec::new();
        let whole = self.read_body(&mut response, &mut body).await;
        if whole.is_none() {
            // What was not kept does not count against the others.
            self.taken.fetch_sub(body.len(), Ordering::Relaxed);
        }
        whole.map(|()| Fetched { status, headers, body })
    }

    /// Reads an answer's body into `body`, counting it against the render's share; `None` past a
    /// bound or on a broken connection (what was read is left in `body`, and counted).
    async fn read_body(&self, response: &mut reqwest::Response, body: &mut Vec<u8>) -> Option<()> {
        while let Some(chunk) = response.chunk().await.ok()? {
            let before = self.taken.fetch_add(chunk.len(), Ordering::Relaxed);
            body.extend_from_slice(&chunk);
            if body.len() > MAX_REMOTE_BYTES || before + chunk.len() > MAX_RENDER_BYTES {
                return None;
            }
        }
        Some(())
    }
}

/// Resolves a host name to its addresses that may be reached: public ones, none of this machine's.
struct PublicOnly {
    reach: Reach,
}

impl Resolve for PublicOnly {
    fn resolve(&self, name: Name) -> Resolving {
        let reach = self.reach.clone();
        Box::pin(async move {
            let found = tokio::net::lookup_host((name.as_str(), 0)).await?;
            let allowed: Vec<SocketAddr> = found.filter(|a| reach.allows(a.ip())).collect();
            if allowed.is_empty() {
                let refused: Box<dyn std::error::Error + Send + Sync> =
                    format!("{} resolves to no public address", name.as_str()).into();
                return Err(refused);
            }
            Ok(Box::new(allowed.into_iter()) as Addrs)
        })
    }
}

/// The addresses of this machine's network interfaces (empty when they cannot be listed: the
/// address ranges still hold).
fn own_addresses() -> Vec<IpAddr> {
    let Ok(interfaces) = nix::ifaddrs::getifaddrs() else { return Vec::new() };
    interfaces
        .filter_map(|i| {
            let address = i.address?;
            address
                .as_sockaddr_in()
                .map(|a| IpAddr::V4(a.ip()))
                .or_else(|| address.as_sockaddr_in6().map(|a| IpAddr::V6(a.ip())))
        })
        .collect()
}

/// Whether an address may be reached: a public one, not this machine's own.
fn reachable(ip: IpAddr, own: &[IpAddr]) -> bool {
    let ip = match ip {
        // Written as IPv6, an IPv4 address is that address.
        IpAddr::V6(v6) => v6.to_ipv4_mapped().or_else(|| embedded_v4(v6)).map_or(ip, IpAddr::V4),
        v4 => v4,
    };
    let public = match ip {
        IpAddr::V4(v4) => public_v4(v4),
        IpAddr::V6(v6) => public_v6(v6),
    };
    public && !own.contains(&ip)
}

/// The IPv4 address an IPv6 address stands for, in the forms that carry one to its host: the
/// deprecated IPv4-compatible `::a.b.c.d` and NAT64's `64:ff9b::a.b.c.d`.
fn embedded_v4(ip: Ipv6Addr) -> Option<Ipv4Addr> {
    let s = ip.segments();
    let low = Ipv4Addr::from((u32::from(s[6]) << 16) | u32::from(s[7]));
    match s {
        [0, 0, 0, 0, 0, 0, ..] if !ip.is_loopback() && !ip.is_unspecified() => Some(low),
        [0x64, 0xff9b, 0, 0, 0, 0, ..] => Some(low),
        _ => None,
    }
}

fn public_v4(ip: Ipv4Addr) -> bool {
    let [a, b, c, _] = ip.octets();
    !(ip.is_loopback()
        || ip.is_private()
        || ip.is_link_local()
        || ip.is_unspecified()
        || ip.is_broadcast()
        || ip.is_multicast()
        || ip.is_documentation()
        || a == 0
        // Shared (carrier-grade NAT), benchmarking, reserved.
        || (a == 100 && (64..128).contains(&b))
        || (a == 198 && (18..20).contains(&b))
        || a >= 240
        // IETF protocol assignments.
        || (a == 192 && b == 0 && c == 0))
}

fn public_v6(ip: Ipv6Addr) -> bool {
    let first = ip.segments()[0];
    !(ip.is_loopback()
        || ip.is_unspecified()
        || ip.is_multicast()
        // Unique local, link-local, site-local (deprecated), documentation.
        || (first & 0xfe00) == 0xfc00
        || (first & 0xffc0) == 0xfe80
        || (first & 0xffc0) == 0xfec0
        || (first == 0x2001 && ip.segments()[1] == 0x0db8))
}

/// Whether a render with remote content allowed may ask for `url`: `http` or `https`, to a public
/// address that is not this machine's, or to a host name that is not local by its form
/// (`localhost` and names under it, `.local`, `.internal`, `.home.arpa`, names without a dot);
/// where a name leads is checked when it is resolved ([`PublicOnly`]).
fn may_go_out(url: &str, reach: &Reach) -> bool {
    let Ok(u) = url::Url::parse(url) else { return false };
    if !matches!(u.scheme(), "http" | "https") {
        return false;
    }
    match u.host() {
        Some(url::Host::Ipv4(ip)) => reach.allows(IpAddr::V4(ip)),
        Some(url::Host::Ipv6(ip)) => reach.allows(IpAddr::V6(ip)),
        Some(url::Host::Domain(d)) => {
            let d = d.trim_end_matches('.').to_ascii_lowercase();
            d.contains('.')
                && d != "localhost"
                && ![".localhost", ".local", ".internal", ".home.arpa"].iter().any(|s| d.ends_with(s))
        }
        None => false,
    }
}

/// Stand-in web servers on loopback for the tests.
#[cfg(test)]
pub(crate) mod stand_in {
    use std::net::SocketAddr;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;
    use std::time::Duration;

    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    /// What a held-back server saw.
    #[derive(Default)]
    pub(crate) struct Seen {
        open: AtomicUsize,
        /// The most requests it had open at once.
        pub(crate) most: AtomicUsize,
        /// The head of each request, as it came.
        pub(crate) heads: std::sync::Mutex<Vec<String>>,
    }

    /// A server that answers every request with `size` bytes of `image/png`, each held back until
    /// `together` requests are open at once (or 10 s have passed): fetches made one after another
    /// never see their answers before that wait.
    pub(crate) async fn held_back(together: usize, size: usize) -> std::io::Result<(SocketAddr, Arc<Seen>)> {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        let at = listener.local_addr()?;
        let seen = Arc::new(Seen::default());
        let (reached, _) = tokio::sync::watch::channel(false);
        let reached = Arc::new(reached);
        let counts = Arc::clone(&seen);
        tokio::spawn(async move {
            while let Ok((mut socket, _)) = listener.accept().await {
                let (seen, reached) = (Arc::clone(&counts), Arc::clone(&reached));
                tokio::spawn(async move {
                    let mut asked = vec![0u8; 4096];
                    let n = socket.read(&mut asked).await.unwrap_or(0);
                    if let Ok(mut heads) = seen.heads.lock() {
                        heads.push(String::from_utf8_lossy(&asked[..n]).into_owned());
                    }
                    let open = seen.open.fetch_add(1, Ordering::SeqCst) + 1;
                    seen.most.fetch_max(open, Ordering::SeqCst);
                    if open >= together {
                        reached.send_replace(true);
                    }
                    let mut wait = reached.subscribe();
                    let _ = tokio::time::timeout(Duration::from_secs(10), wait.wait_for(|r| *r)).await;
                    let mut reply = format!(
                        "HTTP/1.1 200 OK\r\ncontent-type: image/png\r\ncontent-length: {size}\r\nconnection: close\r\n\r\n"
                    )
                    .into_bytes();
                    reply.resize(reply.len() + size, b'x');
                    let _ = socket.write_all(&reply).await;
                    seen.open.fetch_sub(1, Ordering::SeqCst);
                });
            }
        });
        Ok((at, seen))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_public_hosts_are_reached() {
        let own = Reach::Public(vec![IpAddr::V4(Ipv4Addr::new(203, 0, 114, 7))].into());
        for ok in ["https://example.com/a.png", "http://93.184.216.34/x", "http://[2606:2800:220:1::]/"] {
            assert!(may_go_out(ok, &own), "{ok}");
        }
        for no in [
            "http://127.0.0.1:8025/api/status",
            "http://localhost/",
            "http://mailshelf.localhost/x",
            "http://10.0.0.1/",
            "http://192.168.1.1/",
            "http://172.16.0.1/",
            "http://169.254.169.254/latest/meta-data/",
            "http://100.64.0.1/",
            "http://0.0.0.0/",
            "http://192.0.2.2/",
            "http://198.18.0.1/",
            "http://240.0.0.1/",
            "http://[::1]/",
            "http://[fd00::1]/",
            "http://[fe80::1]/",
            "http://[fec0::1]/",
            "http://[2001:db8::1]/",
            "http://[::ffff:127.0.0.1]/",
            "http://[::ffff:10.1.2.3]/",
            "http://[::7f00:1]/",
            "http://[64:ff9b::7f00:1]/",
            // This machine's own address, as itself and written as IPv6.
            "http://203.0.114.7/",
            "http://[::ffff:203.0.114.7]/",
            "http://[::cb00:7207]/",
            "http://intranet/",
            "http://printer.local/",
            "file:///etc/passwd",
            "ftp://example.com/",
            "data:text/html,x",
        ] {
            assert!(!may_go_out(no, &own), "{no}");
        }
    }

    #[test]
    fn this_machines_addresses_are_listed() {
        // Every machine has a loopback interface.
        assert!(own_addresses().iter().any(IpAddr::is_loopback), "{:?}", own_addresses());
    }

    /// A stand-in server on loopback answering `/small` (a picture), `/huge` (past the bound),
    /// `/hop` (a redirect to `/small`); its address.
    async fn stand_in() -> std::io::Result<SocketAddr> {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        let at = listener.local_addr()?;
        tokio::spawn(async move {
            while let Ok((mut socket, _)) = listener.accept().await {
                tokio::spawn(async move {
                    let mut asked = vec![0u8; 4096];
                    let n = socket.read(&mut asked).await.unwrap_or(0);
                    let line = String::from_utf8_lossy(&asked[..n]).lines().next().unwrap_or("").to_string();
                    let reply: Vec<u8> = if line.contains("/small") {
                        b"HTTP/1.1 200 OK\r\ncontent-type: image/png\r\ncontent-length: 4\r\nconnection: close\r\n\r\nPNG!".to_vec()
                    } else if line.contains("/hop") {
                        b"HTTP/1.1 302 Found\r\nlocation: /small\r\ncontent-length: 0\r\nconnection: close\r\n\r\n"
                            .to_vec()
                    } else {
                        let mut r = b"HTTP/1.1 200 OK\r\ncontent-type: image/png\r\nconnection: close\r\n\r\n".to_vec();
                        r.resize(r.len() + MAX_REMOTE_BYTES + 1, b'x');
                        r
                    };
                    let _ = socket.write_all(&reply).await;
                });
            }
        });
        Ok(at)
    }

    #[tokio::test]
    async fn remote_content_is_fetched_within_its_bounds() -> std::io::Result<()> {
        let at = stand_in().await?;
        let anything = Remote::reaching(Reach::Anything).ok_or_else(|| std::io::Error::other("client"))?;
        let small =
            anything.fetch(&format!("http://{at}/small"), &[]).await.ok_or_else(|| std::io::Error::other("small"))?;
        assert_eq!((small.status, small.body.as_slice()), (200, &b"PNG!"[..]));
        assert!(small.headers.iter().any(|(k, v)| k == "content-type" && v == "image/png"), "{:?}", small.headers);
        let hop = anything.fetch(&format!("http://{at}/hop"), &[]).await.ok_or_else(|| std::io::Error::other("hop"))?;
        assert_eq!(hop.body, b"PNG!", "a redirect followed");
        assert!(anything.fetch(&format!("http://{at}/huge"), &[]).await.is_none(), "past the bound");
        // As the server fetches: loopback is this machine, whether named or written.
        let public = Remote::new().ok_or_else(|| std::io::Error::other("client"))?;
        for url in [format!("http://{at}/small"), format!("http://localhost:{}/small", at.port())] {
            assert!(public.fetch(&url, &[]).await.is_none(), "{url}");
        }
        Ok(())
    }

    #[tokio::test]
    async fn remote_resources_are_fetched_side_by_side_a_few_at_a_time() -> std::io::Result<()> {
        let (at, seen) = stand_in::held_back(AT_ONCE, 4).await?;
        let remote = Arc::new(Remote::anywhere().ok_or_else(|| std::io::Error::other("client"))?);
        let fetches: Vec<_> = (0..AT_ONCE + 3)
            .map(|i| {
                let remote = Arc::clone(&remote);
                tokio::spawn(async move { remote.fetch(&format!("http://{at}/{i}.png"), &[]).await })
            })
            .collect();
        for fetch in fetches {
            assert!(fetch.await.map_err(std::io::Error::other)?.is_some());
        }
        assert_eq!(seen.most.load(Ordering::SeqCst), AT_ONCE, "at most {AT_ONCE} at once, and that many");
        Ok(())
    }

    #[tokio::test]
    async fn a_render_takes_a_bounded_share_from_outside() -> std::io::Result<()> {
        // Five resources of 15 MiB, each within its own bound: four fit the render's 64 MiB.
        let (at, _) = stand_in::held_back(1, 15 << 20).await?;
        let remote = Arc::new(Remote::anywhere().ok_or_else(|| std::io::Error::other("client"))?);
        let fetches: Vec<_> = (0..5)
            .map(|i| {
                let remote = Arc::clone(&remote);
                tokio::spawn(async move { remote.fetch(&format!("http://{at}/{i}.png"), &[]).await.is_some() })
            })
            .collect();
        let mut had = 0;
        for fetch in fetches {
            had += usize::from(fetch.await.map_err(std::io::Error::other)?);
        }
        assert_eq!(had, 4);
        assert_eq!(remote.taken.load(Ordering::SeqCst), 4 * (15 << 20), "what was not kept is given back");
        Ok(())
    }
}
