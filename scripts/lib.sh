# What the bench scripts share; sourced by them (`. "$(dirname "$0")/lib.sh"`), never run.

# layer_list LAYERS: the layer numbers of a range `A..B` (inclusive) or a comma-separated list,
# one per line.
layer_list() {
    case $1 in
    *..*) seq "${1%..*}" "${1#*..}" ;;
    *) echo "$1" | tr , '\n' ;;
    esac
}

# link_lower DIR RULES N DEST: hard-links (or copies) the files of layers 0..N-1 of DIR/RULES
# into DEST/RULES, with their JSON documents copied; DIR is never modified. A missing layer is
# an error: the build would otherwise make it inside the timed run.
link_lower() {
    local dir=$1 rules=$2 n=$3 dest=$4 m f j
    mkdir -p "$dest/$rules"
    for m in $(seq 0 $((n - 1))); do
        f=$(printf "layer-%02d.owdb" "$m")
        j=$(printf "layer-%02d.json" "$m")
        if [ ! -f "$dir/$rules/$f" ]; then
            echo "$(basename "$0"): $dir/$rules/$f is missing" >&2
            return 2
        fi
        ln "$dir/$rules/$f" "$dest/$rules/$f" 2>/dev/null || cp "$dir/$rules/$f" "$dest/$rules/$f"
        if [ -f "$dir/$rules/$j" ]; then cp "$dir/$rules/$j" "$dest/$rules/$j"; fi
    done
}
