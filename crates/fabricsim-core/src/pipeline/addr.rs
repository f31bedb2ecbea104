//! IPv4 addresses of hosts and prefixes for match fields.
//!
//! The core has no IP layer, so match-action stages see synthetic addresses:
//! the `k`-th host of the topology (hosts counted in node order) has the
//! address `10.0.0.0 + k + 1` (`h0` of a star is 10.0.0.1). Prefixes are
//! written `a.b.c.d/len`.

use crate::error::ConfigError;

/// Address of the host with index `k` among the topology's hosts.
#[inline]
pub fn host_address(k: u32) -> u32 {
    0x0A00_0000u32.wrapping_add(k).wrapping_add(1)
}

/// Dotted-quad text of an address.
pub fn format_ip(a: u32) -> String {
    format!("{}.{}.{}.{}", a >> 24, (a >> 16) & 255, (a >> 8) & 255, a & 255)
}

/// An IPv4 prefix.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Prefix {
    pub addr: u32,
    pub len: u8,
}

impl Prefix {
    /// Parses `a.b.c.d/len` (or a bare address, a /32); `path` names the field in errors.
    pub fn parse(s: &str, path: &str) -> Result<Prefix, ConfigError> {
        let bad = || ConfigError::new(path, format!("'{s}' is not an IPv4 prefix (write it as a.b.c.d/len)"));
        let (ip, len) = match s.split_once('/') {
            Some((ip, len)) => (ip, len.trim().parse::<u8>().map_err(|_| bad())?),
            None => (s, 32),
        };
        if len > 32 {
            return Err(bad());
        }
        let parts: Vec<&str> = ip.trim().split('.').collect();
        if parts.len() != 4 {
            return Err(bad());
        }
        let mut addr = 0u32;
        for p in parts {
            addr = (addr << 8) | p.parse::<u8>().map_err(|_| bad())? as u32;
        }
        let p = Prefix { addr, len };
        if addr & !p.mask() != 0 {
            return Err(ConfigError::new(
                path,
                format!("'{s}' has bits set past its length (did you mean {}/{len}?)", format_ip(addr & p.mask())),
            ));
        }
        Ok(p)
    }

    #[inline]
    pub fn mask(self) -> u32 {
        if self.len == 0 {
            0
        } else {
            u32::MAX << (32 - self.len)
        }
    }

    #[inline]
    pub fn contains(self, a: u32) -> bool {
        a & self.mask() == self.addr
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefixes_parse_and_match() {
        let p = Prefix::parse("10.0.0.0/24", "x").unwrap();
        assert!(p.contains(host_address(0)));
        assert!(p.contains(host_address(254)));
        assert!(!p.contains(host_address(255)));
        assert_eq!(Prefix::parse("10.0.0.7", "x").unwrap().len, 32);
        assert!(Prefix::parse("0.0.0.0/0", "x").unwrap().contains(12345));
        assert_eq!(format_ip(host_address(0)), "10.0.0.1");
    }

    #[test]
    fn bad_prefixes_name_the_field() {
        let e = Prefix::parse("10.0.0.1/24", "stages[0].rules[1].src").unwrap_err();
        assert_eq!(e.path, "stages[0].rules[1].src");
        assert!(e.message.contains("10.0.0.0/24"), "{}", e.message);
        assert!(Prefix::parse("10.0.0/8", "x").is_err());
        assert!(Prefix::parse("10.0.0.0/33", "x").is_err());
        assert!(Prefix::parse("300.0.0.0/8", "x").is_err());
    }
}
