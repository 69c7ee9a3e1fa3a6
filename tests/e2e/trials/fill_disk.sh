# trials/fill_disk.sh: the trials of the disk-full message checks (e2e/18b part 3 on the
# local platform, e2e/59b on the remote one; lib.sh's disk_full_messages): sequence 0
# fills its trial directory's disk, waits 2 s, frees it and exits 1; sequence 1 exits 1
# on a disk with room; sequence 2 fills it and exits 1.
fill() { dd if=/dev/zero of="$NNI_SYS_DIR/junk" bs=64k 2> /dev/null; }
case $NNI_TRIAL_SEQ_ID in
0) fill; sleep 2; rm -f "$NNI_SYS_DIR/junk"; exit 1 ;;
1) exit 1 ;;
*) fill; echo "the disk is full" >&2; exit 1 ;;
esac
