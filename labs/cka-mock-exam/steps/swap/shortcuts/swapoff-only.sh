#!/usr/bin/env bash
# Off now; the fstab line turns it on again at the next boot.
# expect-output: 再起動後: /swapfile が有効に戻ります
swapoff -a
