//! What a Firefox profile holds before a launch, written as text: the
//! preferences (`user.js`) that choose the protocol and keep the browser
//! quiet, the certificate overrides (`cert_override.txt`) that trust the
//! server's certificate, and the scripts that trust certificate
//! authorities and map host names to addresses. Pure: the tests read the
//! text.

use h3lab_client::ResolveRule;
use h3lab_results::Proto;
use sha2::{Digest, Sha256};

/// A preference's value as `user.js` writes it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Pref {
    Bool(bool),
    Int(u32),
    Text(String),
}

/// An hour: longer than any load may take, so no TCP backup starts.
const NO_TCP_RACE_MS: u32 = 3_600_000;

/// Preferences of every launch: no traffic of Firefox's own (updates,
/// telemetry, remote settings, captive-portal checks, favicons), page
/// timers at full precision, and h3 kept on with a private authority
/// (else a test certificate turns it off). The HTTP cache is bypassed
/// per tab over BiDi instead of turned off here: with the memory cache off,
/// a stylesheet the preload scanner fetched was fetched again.
const BASE: &[(&str, bool)] = &[
    ("app.update.disabledForTesting", true),
    ("browser.chrome.site_icons", false),
    ("browser.newtabpage.enabled", false),
    ("browser.safebrowsing.update.enabled", false),
    ("browser.shell.checkDefaultBrowser", false),
    ("datareporting.policy.dataSubmissionEnabled", false),
    ("network.captive-portal-service.enabled", false),
    ("network.connectivity-service.enabled", false),
    (
        "network.http.http3.disable_when_third_party_roots_found",
        false,
    ),
    ("privacy.reduceTimerPrecision", false),
    ("toolkit.telemetry.reportingpolicy.firstRun", false),
];

/// The preferences of a launch for `proto`, with `origins` (`(host,
/// port)`, the page's first) the ones h3 is forced on.
///
/// - h3: HTTP/3 on, and every origin mapped to h3 on its own port
///   (`alt-svc-mapping-for-testing`): QUIC from the first request, with
///   no TCP connection beside it: none raced against a slow handshake
///   (`backup_timer_delay`, 100 ms by default) and none opened ahead
///   (`speculative-parallel-limit`): a forced h3 load is QUIC's alone;
/// - auto: HTTP/3 on, no mapping: h3 only where `Alt-Svc` leads;
/// - h2: HTTP/3 off; h1: HTTP/3 and HTTP/2 off.
pub(crate) fn prefs(proto: Proto, origins: &[(String, u16)]) -> Vec<(&'static str, Pref)> {
    let mut prefs: Vec<(&'static str, Pref)> = (BASE.iter())
        .map(|&(name, on)| (name, Pref::Bool(on)))
        .collect();
    prefs.push(("browser.startup.homepage", Pref::Text("about:blank".into())));
    prefs.push(("services.settings.server", Pref::Text(String::new())));
    let h3 = matches!(proto, Proto::H3 | Proto::Auto);
    prefs.push(("network.http.http3.enable", Pref::Bool(h3)));
    if proto == Proto::H1 {
        prefs.push(("network.http.http2.enabled", Pref::Bool(false)));
    }
    if proto == Proto::H3 {
        let mapping: Vec<String> = (origins.iter())
            .map(|(host, port)| format!("{host};h3=:{port}"))
            .collect();
        prefs.push((
            "network.http.http3.alt-svc-mapping-for-testing",
            Pref::Text(mapping.join(",")),
        ));
        prefs.push((
            "network.http.http3.backup_timer_delay",
            Pref::Int(NO_TCP_RACE_MS),
        ));
        prefs.push(("network.http.speculative-parallel-limit", Pref::Int(0)));
    }
    prefs
}

/// `prefs` as `user.js`.
pub(crate) fn user_js(prefs: &[(&str, Pref)]) -> String {
    let line = |(name, value): &(&str, Pref)| {
        let value = match value {
            Pref::Bool(on) => on.to_string(),
            Pref::Int(number) => number.to_string(),
            Pref::Text(text) => serde_json::Value::from(text.as_str()).to_string(),
        };
        format!("user_pref({}, {value});\n", serde_json::Value::from(*name))
    };
    prefs.iter().map(line).collect()
}

/// `cert_override.txt` accepting the certificate `der` for each of
/// `origins`: Firefox's pin of one certificate on one host and port,
/// honoured over TCP and QUIC alike (checked with Firefox 153; a wrong
/// fingerprint fails with `MOZILLA_PKIX_ERROR_SELF_SIGNED_CERT`).
pub(crate) fn cert_overrides(der: &[u8], origins: &[(String, u16)]) -> String {
    let fingerprint: Vec<String> = (Sha256::digest(der).iter())
        .map(|byte| format!("{byte:02X}"))
        .collect();
    let fingerprint = fingerprint.join(":");
    let mut text = String::from("# PSM Certificate Override Settings file\n");
    for (host, port) in origins {
        // host:port:origin-attributes, the hash's OID, the fingerprint.
        text.push_str(&format!(
            "{host}:{port}:\tOID.2.16.840.1.101.3.4.2.1\t{fingerprint}\t\n"
        ));
    }
    text
}

/// A script for Firefox's parent process that trusts each certificate
/// (DER) as an authority for servers in the profile's certificate
/// database (`nsIX509CertDB`, as `certutil -A -t C,,` does), and whose
/// value is the list of those Firefox refused: `"N: why"`, N from 1.
pub(crate) fn authorities_script<'a>(certificates: impl Iterator<Item = &'a [u8]>) -> String {
    use base64::Engine;
    let encoded: Vec<serde_json::Value> = certificates
        .map(|der| base64::engine::general_purpose::STANDARD.encode(der).into())
        .collect();
    format!(
        "(() => {{\n\
         const db = Cc[\"@mozilla.org/security/x509certdb;1\"].getService(Ci.nsIX509CertDB);\n\
         const refused = [];\n\
         {}.forEach((der, i) => {{\n\
           try {{ db.addCertFromBase64(der, \"C,,\"); }}\n\
           catch (e) {{ refused.push(`${{i + 1}}: ${{e.message}}`); }}\n\
         }});\n\
         return refused;\n\
         }})()",
        serde_json::Value::Array(encoded)
    )
}

/// A script for Firefox's parent process that resolves each rule's host
/// to its address (`nsINativeDNSResolverOverride`, what Firefox's own
/// tests use), as Chromium's `--host-resolver-rules` MAP does; `None`
/// without rules. Firefox connects to the URL's own port, so a rule that
/// moves the port is refused.
pub(crate) fn dns_override_script(rules: &[ResolveRule]) -> anyhow::Result<Option<String>> {
    if rules.is_empty() {
        return Ok(None);
    }
    let mut script = String::from(
        "const dns = Cc[\"@mozilla.org/network/native-dns-override;1\"]\
         .getService(Ci.nsINativeDNSResolverOverride);\n",
    );
    for rule in rules {
        if let Some(port) = rule.connect_port.filter(|&port| port != rule.port) {
            anyhow::bail!(
                "--resolve {}:{}:{}:{port}: Firefox connects to the URL's own port; \
                 serve the origin on {} or use --browser chromium",
                rule.host,
                rule.port,
                rule.addr,
                rule.port
            );
        }
        let host = serde_json::Value::from(rule.host.as_str());
        let addr = serde_json::Value::from(rule.addr.to_string());
        script.push_str(&format!("dns.addIPOverride({host}, {addr});\n"));
    }
    Ok(Some(script))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn origins() -> Vec<(String, u16)> {
        vec![
            ("www.example.test".to_string(), 443),
            ("img.example.test".to_string(), 8443),
        ]
    }

    fn pref<'a>(prefs: &'a [(&str, Pref)], name: &str) -> Option<&'a Pref> {
        prefs.iter().find(|(n, _)| *n == name).map(|(_, v)| v)
    }

    #[test]
    fn h3_maps_every_origin_to_quic_and_the_others_turn_protocols_off() {
        let h3 = prefs(Proto::H3, &origins());
        assert_eq!(
            pref(&h3, "network.http.http3.alt-svc-mapping-for-testing"),
            Some(&Pref::Text(
                "www.example.test;h3=:443,img.example.test;h3=:8443".into()
            ))
        );
        let auto = prefs(Proto::Auto, &origins());
        assert_eq!(
            pref(&auto, "network.http.http3.enable"),
            Some(&Pref::Bool(true))
        );
        assert_eq!(
            pref(&auto, "network.http.http3.alt-svc-mapping-for-testing"),
            None
        );
        let h2 = prefs(Proto::H2, &origins());
        assert_eq!(
            pref(&h2, "network.http.http3.enable"),
            Some(&Pref::Bool(false))
        );
        assert_eq!(pref(&h2, "network.http.http2.enabled"), None);
        let h1 = prefs(Proto::H1, &origins());
        assert_eq!(
            pref(&h1, "network.http.http2.enabled"),
            Some(&Pref::Bool(false))
        );
        assert_eq!(
            pref(&h3, "network.http.http3.backup_timer_delay"),
            Some(&Pref::Int(NO_TCP_RACE_MS))
        );
        assert_eq!(
            pref(&h3, "network.http.speculative-parallel-limit"),
            Some(&Pref::Int(0))
        );
        assert_eq!(pref(&auto, "network.http.http3.backup_timer_delay"), None);
    }

    #[test]
    fn user_js_quotes_text_and_writes_booleans_bare() {
        let text = user_js(&[
            ("a.b", Pref::Bool(true)),
            ("e.f", Pref::Int(7)),
            ("c.d", Pref::Text("x;h3=:1,\"y\"".into())),
        ]);
        assert_eq!(
            text,
            "user_pref(\"a.b\", true);\nuser_pref(\"e.f\", 7);\nuser_pref(\"c.d\", \"x;h3=:1,\\\"y\\\"\");\n"
        );
    }

    #[test]
    fn a_certificate_is_pinned_by_its_sha256_on_each_origin() {
        let text = cert_overrides(b"abc", &origins());
        let abc = "BA:78:16:BF:8F:01:CF:EA:41:41:40:DE:5D:AE:22:23:B0:03:61:A3:96:17:7A:9C:B4:10:FF:61:F2:00:15:AD";
        assert_eq!(
            text.lines().collect::<Vec<_>>(),
            [
                "# PSM Certificate Override Settings file",
                &*format!("www.example.test:443:\tOID.2.16.840.1.101.3.4.2.1\t{abc}\t"),
                &*format!("img.example.test:8443:\tOID.2.16.840.1.101.3.4.2.1\t{abc}\t"),
            ]
        );
    }

    #[test]
    fn every_authority_is_trusted_for_servers_and_refusals_are_returned() {
        let script = authorities_script([&b"abc"[..], &b"de"[..]].into_iter());
        assert!(script.contains(r#"["YWJj","ZGU="].forEach"#), "{script}");
        assert!(
            script.contains(r#"addCertFromBase64(der, "C,,")"#),
            "{script}"
        );
        assert!(
            script.trim_end().ends_with("return refused;\n})()"),
            "{script}"
        );
    }

    #[test]
    fn resolve_rules_become_dns_overrides_and_a_moved_port_is_refused() {
        assert_eq!(dns_override_script(&[]).unwrap(), None);
        let rules = ["www.example.test:443:198.18.0.10:443".parse().unwrap()];
        let script = dns_override_script(&rules).unwrap().unwrap();
        assert!(
            script.ends_with("dns.addIPOverride(\"www.example.test\", \"198.18.0.10\");\n"),
            "{script}"
        );
        let moved = ["static.example.test:443:127.0.0.12:4433".parse().unwrap()];
        let err = dns_override_script(&moved).unwrap_err().to_string();
        assert!(
            err.contains("own port") && err.contains("chromium"),
            "{err}"
        );
    }
}
