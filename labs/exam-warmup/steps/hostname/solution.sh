#!/usr/bin/env bash
hostname > /root/hostname.txt
