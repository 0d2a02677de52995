// Reference floor for UDP echo packets/s on this machine: the plainest C client/server pair,
// recvmmsg/sendmmsg without segmentation offload (bench/probe.sh compares npt probe + npt serve
// with it). Kept terse on purpose: it is a yardstick, not part of npt.
// Build: cc -O2 -o udpecho udpecho.c
// Server: ./udpecho s 127.0.0.1 PORT BATCH   (BATCH=1: recvfrom/sendto; >1: recvmmsg/sendmmsg)
// Client: ./udpecho c 127.0.0.1 PORT BATCH WINDOW SECONDS SIZE   -> prints echo_pps
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <time.h>
#include <poll.h>
#include <arpa/inet.h>
#include <sys/socket.h>
#define MAXB 256
static double now(void){ struct timespec t; clock_gettime(CLOCK_MONOTONIC,&t); return t.tv_sec+t.tv_nsec*1e-9; }
int main(int argc,char**argv){
  int srv = argv[1][0]=='s'; int B = atoi(argv[4]); if(B>MAXB)B=MAXB;
  struct sockaddr_in a={0}; a.sin_family=AF_INET; a.sin_port=htons(atoi(argv[3])); inet_pton(AF_INET,argv[2],&a.sin_addr);
  int fd=socket(AF_INET,SOCK_DGRAM,0); int big=4<<20; setsockopt(fd,SOL_SOCKET,SO_RCVBUF,&big,sizeof big); setsockopt(fd,SOL_SOCKET,SO_SNDBUF,&big,sizeof big);
  static char bufs[MAXB][2048]; struct mmsghdr mm[MAXB]; struct iovec iov[MAXB]; struct sockaddr_in from[MAXB];
  for(int i=0;i<MAXB;i++){ iov[i].iov_base=bufs[i]; iov[i].iov_len=2048; memset(&mm[i],0,sizeof mm[i]); mm[i].msg_hdr.msg_iov=&iov[i]; mm[i].msg_hdr.msg_iovlen=1; mm[i].msg_hdr.msg_name=&from[i]; mm[i].msg_hdr.msg_namelen=sizeof from[i]; }
  if(srv){ if(bind(fd,(void*)&a,sizeof a)<0){perror("bind");return 1;}
    for(;;){ if(B==1){ struct sockaddr_in f; socklen_t fl=sizeof f; ssize_t n=recvfrom(fd,bufs[0],2048,0,(void*)&f,&fl); if(n>0) sendto(fd,bufs[0],n,0,(void*)&f,fl); }
      else { for(int i=0;i<B;i++){ iov[i].iov_len=2048; mm[i].msg_hdr.msg_namelen=sizeof from[i]; }
        int n=recvmmsg(fd,mm,B,MSG_WAITFORONE,NULL); if(n<=0) continue;
        for(int i=0;i<n;i++) iov[i].iov_len=mm[i].msg_len; sendmmsg(fd,mm,n,0); } } }
  int W=atoi(argv[5]); double secs=atof(argv[6]); int sz=atoi(argv[7]);
  connect(fd,(void*)&a,sizeof a); memset(bufs,'x',sizeof bufs);
  long long sent=0,rcvd=0; double t0=now(), tend=t0+secs; int outstanding=0; double last=now();
  while(now()<tend){
    while(outstanding<W){ int k = W-outstanding; if(k>B)k=B;
      if(B==1){ if(send(fd,bufs[0],sz,0)<0) break; sent++; outstanding++; }
      else { for(int i=0;i<k;i++) iov[i].iov_len=sz, mm[i].msg_hdr.msg_name=NULL, mm[i].msg_hdr.msg_namelen=0; int n=sendmmsg(fd,mm,k,0); if(n<=0)break; sent+=n; outstanding+=n; } }
    struct pollfd pf={fd,POLLIN,0}; if(poll(&pf,1,5)<=0){ if(now()-last>0.05){ outstanding=0; last=now(); } continue; } // assume lost after 50ms idle
    if(B==1){ if(recv(fd,bufs[0],2048,0)>0){rcvd++; outstanding--;} }
    else { for(int i=0;i<B;i++){ iov[i].iov_len=2048; mm[i].msg_hdr.msg_name=NULL; mm[i].msg_hdr.msg_namelen=0; } int n=recvmmsg(fd,mm,B,MSG_DONTWAIT,NULL); if(n>0){rcvd+=n; outstanding-=n;} }
    last=now();
  }
  double el=now()-t0; printf("sent=%lld rcvd=%lld echo_pps=%.0f\n",sent,rcvd,rcvd/el); return 0; }
