// Reference floor for UDP echo packets/s with segmentation offload: the plainest C client/server
// pair that batches the way npt's relay does — UDP GSO (UDP_SEGMENT: one send carries up to 64
// equal datagrams) and UDP GRO (UDP_GRO: one receive returns a run of them, the segment size in
// a control message). bench/probe.sh reports npt against this pair and against udpecho.c (which
// uses neither), so the relay figure is read against a floor that has the same tools.
// Kept terse on purpose: it is a yardstick, not part of npt.
// Build: cc -O2 -o udpecho_gso udpecho_gso.c
// Server: ./udpecho_gso s 127.0.0.1 PORT BATCH   (BATCH GRO buffers per recvmmsg, echoed by sendmmsg)
// Client: ./udpecho_gso c 127.0.0.1 PORT SEGS WINDOW SECONDS SIZE   -> prints echo_pps
//         (SEGS datagrams of SIZE per GSO send, at most WINDOW outstanding)
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdint.h>
#include <unistd.h>
#include <time.h>
#include <poll.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/udp.h>
#include <sys/socket.h>
#ifndef UDP_SEGMENT
#define UDP_SEGMENT 103
#endif
#ifndef UDP_GRO
#define UDP_GRO 104
#endif
#define MAXB 16
#define BUF 65536
static double now(void){ struct timespec t; clock_gettime(CLOCK_MONOTONIC,&t); return t.tv_sec+t.tv_nsec*1e-9; }
static char bufs[MAXB][BUF]; static char ctl[MAXB][CMSG_SPACE(sizeof(int))]; static char ctl_out[MAXB][CMSG_SPACE(sizeof(uint16_t))];
// The GRO segment size of a received message (0 when it came as one datagram).
static int gro_size(struct msghdr *h){ for(struct cmsghdr *c=CMSG_FIRSTHDR(h);c;c=CMSG_NXTHDR(h,c)) if(c->cmsg_level==SOL_UDP&&c->cmsg_type==UDP_GRO){ int v; memcpy(&v,CMSG_DATA(c),sizeof v); return v; } return 0; }
// Datagrams in a received message of n bytes.
static long segs(struct msghdr *h,int n){ int g=gro_size(h); return g>0 ? (n+g-1)/g : 1; }
// Makes message h carry a GSO segment size (0: none).
static void set_gso(struct msghdr *h,char *c,uint16_t g){ if(!g){ h->msg_control=NULL; h->msg_controllen=0; return; }
  h->msg_control=c; h->msg_controllen=CMSG_SPACE(sizeof g); struct cmsghdr *m=CMSG_FIRSTHDR(h); m->cmsg_level=SOL_UDP; m->cmsg_type=UDP_SEGMENT; m->cmsg_len=CMSG_LEN(sizeof g); memcpy(CMSG_DATA(m),&g,sizeof g); }
int main(int argc,char**argv){
  if(argc<5){ fprintf(stderr,"usage: see the header\n"); return 2; }
  int srv = argv[1][0]=='s'; int B = atoi(argv[4]);
  struct sockaddr_in a={0}; a.sin_family=AF_INET; a.sin_port=htons(atoi(argv[3])); inet_pton(AF_INET,argv[2],&a.sin_addr);
  int fd=socket(AF_INET,SOCK_DGRAM,0); int big=4<<20, one=1; setsockopt(fd,SOL_SOCKET,SO_RCVBUF,&big,sizeof big); setsockopt(fd,SOL_SOCKET,SO_SNDBUF,&big,sizeof big);
  if(setsockopt(fd,SOL_UDP,UDP_GRO,&one,sizeof one)<0){ perror("UDP_GRO"); return 1; }
  struct mmsghdr mm[MAXB]; struct iovec iov[MAXB]; struct sockaddr_in from[MAXB];
  for(int i=0;i<MAXB;i++){ iov[i].iov_base=bufs[i]; iov[i].iov_len=BUF; memset(&mm[i],0,sizeof mm[i]); mm[i].msg_hdr.msg_iov=&iov[i]; mm[i].msg_hdr.msg_iovlen=1; mm[i].msg_hdr.msg_name=&from[i]; mm[i].msg_hdr.msg_namelen=sizeof from[i]; }
  if(srv){ if(B<1)B=1; if(B>MAXB)B=MAXB; if(bind(fd,(void*)&a,sizeof a)<0){perror("bind");return 1;}
    for(;;){ for(int i=0;i<B;i++){ iov[i].iov_len=BUF; mm[i].msg_hdr.msg_namelen=sizeof from[i]; mm[i].msg_hdr.msg_control=ctl[i]; mm[i].msg_hdr.msg_controllen=sizeof ctl[i]; }
      int n=recvmmsg(fd,mm,B,MSG_WAITFORONE,NULL); if(n<=0) continue;
      for(int i=0;i<n;i++){ int g=gro_size(&mm[i].msg_hdr); iov[i].iov_len=mm[i].msg_len; set_gso(&mm[i].msg_hdr,ctl_out[i],(uint16_t)(g>0&&(int)mm[i].msg_len>g?g:0)); }
      sendmmsg(fd,mm,n,0); } }
  if(argc<8){ fprintf(stderr,"usage: see the header\n"); return 2; }
  int S=B; if(S<1)S=1; if(S>64)S=64; int W=atoi(argv[5]); double secs=atof(argv[6]); int sz=atoi(argv[7]);
  if(S*sz>BUF){ fprintf(stderr,"SEGS*SIZE over %d\n",BUF); return 2; }
  connect(fd,(void*)&a,sizeof a); memset(bufs,'x',sizeof bufs);
  struct msghdr out={0}; struct iovec oiov={bufs[0],0}; out.msg_iov=&oiov; out.msg_iovlen=1;
  long long sent=0,rcvd=0; double t0=now(), tend=t0+secs; long outstanding=0; double last=now();
  while(now()<tend){
    while(outstanding<W){ int k=W-outstanding; if(k>S)k=S; oiov.iov_len=(size_t)k*sz; set_gso(&out,ctl_out[0],(uint16_t)(k>1?sz:0));
      if(sendmsg(fd,&out,0)<0) break;
      sent+=k; outstanding+=k; }
    struct pollfd pf={fd,POLLIN,0}; if(poll(&pf,1,5)<=0){ if(now()-last>0.05){ outstanding=0; last=now(); } continue; } // assume lost after 50ms idle
    for(int i=0;i<MAXB;i++){ iov[i].iov_len=BUF; mm[i].msg_hdr.msg_name=NULL; mm[i].msg_hdr.msg_namelen=0; mm[i].msg_hdr.msg_control=ctl[i]; mm[i].msg_hdr.msg_controllen=sizeof ctl[i]; }
    int n=recvmmsg(fd,mm,MAXB,MSG_DONTWAIT,NULL);
    for(int i=0;i<n;i++){ long k=segs(&mm[i].msg_hdr,mm[i].msg_len); rcvd+=k; outstanding-=k; }
    last=now();
  }
  double el=now()-t0; printf("sent=%lld rcvd=%lld echo_pps=%.0f\n",sent,rcvd,rcvd/el); return 0; }
