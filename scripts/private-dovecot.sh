# A private Dovecot, for the scripts that have Dovecot write stores (bench/dbox.sh, the Dovecot
# fixtures' make.sh). Sourced, it installs Dovecot when missing (Debian's dovecot-core) and creates
# DOVECOT_USER; then `private_dovecot WORKDIR HOME MAIL_LOCATION [SETTING…]` writes
# WORKDIR/dovecot.conf (no listening service, one static user DOVECOT_USER whose home is HOME,
# the given settings added), starts Dovecot with it and stops it when the script exits. `$conf`
# names the file, for `doveadm -c "$conf"`. Run as root; Dovecot 2.3.
#
#   DOVECOT_USER=dv    the account that owns the stores (Dovecot refuses root); created when missing

DOVECOT_USER="${DOVECOT_USER:-dv}"
if ! command -v doveadm >/dev/null 2>&1; then
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq dovecot-core >/dev/null
fi
id "$DOVECOT_USER" >/dev/null 2>&1 || useradd -M "$DOVECOT_USER"

private_dovecot() {
  local work="$1" home="$2" location="$3"
  shift 3
  conf="$work/dovecot.conf"
  {
    cat <<CONF
mail_location = $location
base_dir = $work/run
log_path = $work/dovecot.log
protocols =
ssl = no
first_valid_uid = 1
default_internal_user = root
default_login_user = root
namespace inbox {
  inbox = yes
  prefix =
  separator = /
}
userdb {
  driver = static
  args = uid=$DOVECOT_USER gid=$DOVECOT_USER home=$home
}
passdb {
  driver = static
  args = nopassword=y
}
CONF
    if (($#)); then printf '%s\n' "$@"; fi
  } >"$conf"
  dovecot -c "$conf"
  trap 'dovecot -c "$conf" stop 2>/dev/null || true' EXIT
}
