#!/usr/bin/env bash
hostname > /root/whoami.txt
