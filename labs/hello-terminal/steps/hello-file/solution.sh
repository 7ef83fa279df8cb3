#!/usr/bin/env bash
echo こんにちは > /root/hello.txt
