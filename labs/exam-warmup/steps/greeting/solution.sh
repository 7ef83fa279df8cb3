#!/usr/bin/env bash
echo こんにちは > /root/greeting.txt
