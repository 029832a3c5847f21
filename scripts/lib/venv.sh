# Sourced by the scripts that make venvs (scripts/*-venv): a disk check before pip starts and no
# half-made venv left behind when it stops.
#
#   venv_begin NAME DIR SIZE_GB PEAK_GB
#
# NAME is the script's name for its messages, DIR the venv, SIZE_GB what the finished venv takes
# and PEAK_GB what it takes while pip installs (the finished venv and the wheels pip downloaded
# into $TMPDIR, kept until it ends: about 1.5 times the venv). Under SIZE_GB free the install
# cannot succeed: it stops here, naming the disk, what is free and what to do. Under PEAK_GB it
# warns and goes on. From here to `venv_done`, a failure removes DIR if this run made it, so that
# a venv pip stopped half-way (a full disk, a lost connection) holds no space and is made afresh
# next time; a directory that was there before is left as it was.
#
#   venv_done
#
# Says the venv is whole: from now on a failure leaves it.

# GB free on the disk that holds DIR or would hold it; nothing where df cannot tell (a chroot
# without /proc), and then no check is made.
venv_free_gb() {
  local dir=$1 kb
  while [[ ! -d $dir ]]; do dir=$(dirname "$dir"); done
  kb=$(df -Pk "$dir" 2>/dev/null | awk 'NR == 2 {print $4}') || true
  [[ $kb =~ ^[0-9]+$ ]] && echo $((kb / 1048576))
  return 0
}

venv_begin() {
  local name=$1 dir=$2 size=$3 peak=$4 free tmp_free
  free=$(venv_free_gb "$dir")
  tmp_free=$(venv_free_gb "${TMPDIR:-/tmp}")
  if [[ -n $free ]] && ((free < size)); then
    echo "$name: $free GB free on the disk of $dir, and the venv takes $size GB ($peak GB while" \
      "pip installs it): free some space, or make it on a larger disk with" \
      "$(venv_env_name "$name")=DIR" >&2
    exit 1
  fi
  if [[ -n $free && -n $tmp_free ]] && ((free < peak || tmp_free < peak - size)); then
    echo "$name: warning: $free GB free on the disk of $dir and $tmp_free GB in ${TMPDIR:-/tmp};" \
      "making the venv needs about $peak GB there while pip installs (the venv $size GB, its" \
      "downloads $((peak - size)) GB in TMPDIR): it may stop with 'No space left on device'" >&2
  fi
  _venv_dir=$dir
  _venv_made_here=0
  [[ -e $dir ]] || _venv_made_here=1
  trap '_venv_failed' EXIT
}

# The variable that chooses the script's venv directory: peer-venv -> SWEEPBENCH_PEER_VENV.
venv_env_name() {
  local base=${1%-venv}
  [[ $base == torch ]] && { echo SWEEPBENCH_VENV; return; }
  base=${base^^}
  echo "SWEEPBENCH_${base//-/_}_VENV"
}

_venv_failed() {
  local status=$?
  if ((status != 0 && _venv_made_here)); then
    rm -rf "$_venv_dir"
    echo "venv: removed the unfinished $_venv_dir (exit $status); the next run makes it afresh;" \
      "$(venv_free_gb "$_venv_dir") GB free now" >&2
  fi
}

venv_done() {
  trap - EXIT
}
